// Starting a sandbox. The outer sandgate-sandbox (on the host) validates the
// options, creates the cgroup, the run dir (if missing) and the control
// socket, then clones the inner process into new user, pid, mount, network,
// ipc and uts namespaces, writes its uid/gid maps, moves it into the cgroup
// and lets it go. The inner process runs the setup pipeline (reporting success
// or the failed step over a CLOEXEC socketpair) and becomes the supervisor,
// pid 1 of the sandbox. The outer stays as a thin waiter: it forwards
// SIGTERM/SIGINT/SIGHUP, kills the inner one 10 s after the TTL if it is still
// there, and when it ends removes the cgroup, the control socket and the run
// dir (only if it created it), and exits with the inner one's status.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sandboxing/id_map.hpp"
#include "sandboxing/policy.hpp"

namespace sandgate::sandboxing {

struct launch_options {
  policy sandbox_policy;
  std::string id;                    // [A-Za-z0-9_.-]{1,64}; random when empty
  std::string run_dir;               // host dir bound at /run/sandgate; empty: a tmpfs
  std::string workspace_dir;         // host dir bound at /workspace; empty: a tmpfs of workspace_bytes
  std::string control_path;          // control mode when set; standalone otherwise
  std::vector<std::string> command;  // standalone
  std::uint32_t host_id_base = default_host_id_base;
  std::optional<std::uint32_t> host_id_slot;  // default: hash of the id
  std::string cgroup_root = "/sys/fs/cgroup";
  std::string cgroup_parent = "sandgate";
  bool require_cgroup = true;  // refuse to run without a memory/pids/cpu cgroup
};

// Exit status of a failed setup (the error is printed to stderr).
inline constexpr int setup_failed_exit = 125;

// True when id may name a sandbox (and its cgroup directory).
bool valid_sandbox_id(const std::string& id);

// Runs the sandbox to its end; returns the process exit status.
int launch(launch_options options);

}  // namespace sandgate::sandboxing
