// The supervisor: pid 1 of the sandbox. A single-threaded epoll loop over a
// signalfd (SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT), a timerfd for the
// TTL, one for the children's deadlines, and in control mode the listening
// control socket, one gateway connection and the pipes of children whose
// output it captures. It spawns confined programs, reaps every process
// (orphans too), reports how each named child ended, and when the TTL
// expires or a shutdown arrives kills everything and returns.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "sandboxing/cgroups.hpp"
#include "sandboxing/spawn.hpp"

namespace sandgate::sandboxing {

struct supervisor_config {
  std::string id;
  confinement confine;
  std::map<std::string, std::string> base_env;  // policy env.set, under every spawn's env
  std::uint64_t max_execution_s = 0;            // carried to the gateway in the ready event
  std::int64_t expires_at = 0;                  // unix seconds
  pid_t host_pid = 0;
  pid_t outer_pid = 0;
  std::uint32_t host_uid = 0;
  std::uint32_t host_gid = 0;
  int oom_counter_fd = -1;   // memory.events / memory.oom_control, or -1
  int child_cgroup_fd = -1;  // the sandbox's cgroup (v2) / pids cgroup (v1), for per-child cgroups; or -1
  cgroup_version child_cgroup_version = cgroup_version::none;
  int outer_fd = -1;   // SOCK_SEQPACKET to the outer process: new TTL deadlines go there
  int listen_fd = -1;  // control mode: the listening socket
  // Egress on from the start: 127.0.0.1:egress_port listens for the egress
  // proxy (see egress_port.hpp); 0: the port is only kept, for open_egress.
  std::uint16_t egress_port = 0;
  std::optional<spawn_spec> standalone;  // standalone mode: the one command
};

// Exit codes: standalone returns the command's status (code, or 128+signal),
// 124 when the TTL ended it; control mode returns 0 (shutdown) or 124 (TTL).
int run_supervisor(const supervisor_config& config);

// The message the supervisor sends the outer process when the TTL moves:
// 'T' then the new deadline (unix seconds) as a host-endian int64.
inline constexpr std::size_t deadline_message_bytes = 9;
// How far ahead a moved deadline may lie; the outer process ignores a report
// past it (its backstop must not be pushed away by a misbehaving supervisor).
inline constexpr std::int64_t max_deadline_ahead_s = 366LL * 24 * 3600;

}  // namespace sandgate::sandboxing
