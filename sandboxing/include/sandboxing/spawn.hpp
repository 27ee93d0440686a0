// Starting one program inside the sandbox, fully confined: own session and
// process group, the environment exactly as given, rlimits, the sandbox user,
// no capabilities, no_new_privs, no inherited descriptors, seccomp filter.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sandboxing/policy.hpp"

namespace sandgate::sandboxing {

struct spawn_spec {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string cwd = "/workspace";
  std::string log;             // stdout+stderr file inside; empty: /dev/null
  bool inherit_stdio = false;  // keep fds 0-2 (standalone mode)
  // Descriptors the child takes as its stdio (the caller keeps ownership):
  int stdin_fd = -1;   // read end of a pipe; -1: /dev/null
  int stdout_fd = -1;  // write end of a pipe; -1: log
  int stderr_fd = -1;  // write end of a pipe; -1: log
  // A terminal's slave side: made the child's controlling terminal (after
  // setsid, before it takes its stdio, which the caller points at it too).
  int tty_fd = -1;
  // The child's own cgroup: on v2 it is cloned straight into cgroup_dir_fd;
  // otherwise (v1, or a kernel without CLONE_INTO_CGROUP) it moves itself
  // there through cgroup_procs_fd before anything else. Either way all its
  // descendants are born inside. -1: none.
  int cgroup_dir_fd = -1;
  int cgroup_procs_fd = -1;
};

struct confinement {
  limits rlimits;
  std::uint32_t uid = 1000;
  std::uint32_t gid = 1000;
  bool may_setgroups = false;
};

// The path execve should run for argv0: itself when it holds a '/', else the
// first executable match in PATH (default /usr/local/bin:/usr/bin:/bin).
std::string resolve_program(const std::string& argv0, const std::map<std::string, std::string>& env);

// Forks and execs; returns the child's pid once execve succeeded. When a step
// in the child fails, the child's error ("execve(/nope): No such file or
// directory") is thrown as a runtime_error and the child is already reaped.
pid_t spawn_confined(const spawn_spec& spec, const confinement& c);

}  // namespace sandgate::sandboxing
