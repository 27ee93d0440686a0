// The inner side of a launch: the setup pipeline run by the cloned process,
// which then becomes the supervisor.
#pragma once

#include <sys/types.h>

#include "sandboxing/cgroups.hpp"
#include "sandboxing/id_map.hpp"
#include "sandboxing/policy.hpp"
#include "sandboxing/rootfs.hpp"
#include "sandboxing/supervisor.hpp"

namespace sandgate::sandboxing::detail {

// What the outer process tells the inner one once its maps and cgroup are in
// place. The cgroup is made while the inner process runs its first steps, so
// its descriptors come with this message (SCM_RIGHTS, in this order, each
// when present): the OOM-kill counter, the directory for per-child cgroups.
struct go_message {
  pid_t host_pid = 0;
  cgroup_version child_cgroup_version = cgroup_version::none;
  bool oom_counter = false;
  bool child_cgroups = false;
};

// Sends go with its descriptors (-1: absent); throws sys_error.
void send_go(int socket_fd, go_message go, int oom_counter_fd, int child_cgroup_fd);

struct init_plan {
  const policy* sandbox_policy = nullptr;
  id_plan ids;
  rootfs_plan rootfs;
  supervisor_config supervisor;  // host_pid and the cgroup descriptors are filled in from go_message
};

// Runs in the cloned child: waits for go on handshake_fd, runs the setup
// steps, reports "ok" or the failed step's error, then runs the supervisor.
// Never returns.
[[noreturn]] void run_inner(init_plan& plan, int handshake_fd);

}  // namespace sandgate::sandboxing::detail
