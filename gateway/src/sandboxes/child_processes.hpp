#pragma once
// The gateway's own child processes (sandbox supervisors, and kernels of
// exempted kernelspecs): started with posix_spawn (no code runs between fork
// and exec in this multi-threaded process), each in its own session, with
// only stdin, stdout, stderr and the descriptors named open, and reaped on
// SIGCHLD.

#include <sys/types.h>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace sandgate::gateway {

struct spawn_spec {
  std::vector<std::string> argv;           // argv[0] is an absolute path
  std::map<std::string, std::string> env;  // the whole environment
  std::string cwd = "/";
  std::string log_path;          // stdout+stderr go here (appended); empty: /dev/null
  std::vector<int> inherit_fds;  // open in the child as 3, 4, ... (nothing else of the gateway's is)
};

// Starts the process; returns its pid, or -1 with `error` set.
pid_t spawn_child(const spawn_spec& spec, std::string& error);

// Calls `on_exit(wait_status)` once when `pid` ends.
void watch_child(pid_t pid, std::function<void(int wait_status)> on_exit);
[[nodiscard]] bool child_running(pid_t pid);

// Reaps every ended child; call on SIGCHLD.
void reap_children();

}  // namespace sandgate::gateway
