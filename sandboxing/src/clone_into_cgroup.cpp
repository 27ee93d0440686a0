#include "clone_into_cgroup.hpp"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace sandgate::sandboxing::detail {
namespace {

// struct clone_args of <linux/sched.h> (that header clashes with glibc's <sched.h>).
struct clone3_args {
  std::uint64_t flags = 0;
  std::uint64_t pidfd = 0;
  std::uint64_t child_tid = 0;
  std::uint64_t parent_tid = 0;
  std::uint64_t exit_signal = 0;
  std::uint64_t stack = 0;
  std::uint64_t stack_size = 0;
  std::uint64_t tls = 0;
  std::uint64_t set_tid = 0;
  std::uint64_t set_tid_size = 0;
  std::uint64_t cgroup = 0;
};

constexpr std::uint64_t clone_into_cgroup_flag = 0x200000000ULL;  // CLONE_INTO_CGROUP

}  // namespace

long clone_into_cgroup(std::uint64_t flags, int cgroup_dir_fd) {
  clone3_args args;
  args.flags = flags | clone_into_cgroup_flag;
  args.exit_signal = SIGCHLD;
  args.cgroup = static_cast<std::uint64_t>(cgroup_dir_fd);
  // No stack given: the child runs on a copy of the caller's, as after fork.
  return ::syscall(SYS_clone3, &args, sizeof args);
}

}  // namespace sandgate::sandboxing::detail
