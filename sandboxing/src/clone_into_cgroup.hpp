// fork (or clone with namespace flags) that puts the child straight into a
// cgroup v2 directory: clone3 with CLONE_INTO_CGROUP (Linux 5.7). The child
// is born inside, so no write to cgroup.procs is needed afterwards; such a
// write migrates the process and waits for an RCU grace period (about half a
// millisecond here, more on a busy host).
#pragma once

#include <cstdint>

namespace sandgate::sandboxing::detail {

// Like fork(2): the child's pid in the parent, 0 in the child, -1 with errno
// on failure (ENOSYS, E2BIG or EINVAL on kernels without clone3 or
// CLONE_INTO_CGROUP: the caller falls back to clone and cgroup.procs).
// flags: CLONE_NEW* flags; the exit signal is SIGCHLD. Like the raw clone
// the outer process uses, it runs no atfork handlers: fine for this
// single-threaded program, whose child only sets itself up and execs.
long clone_into_cgroup(std::uint64_t flags, int cgroup_dir_fd);

}  // namespace sandgate::sandboxing::detail
