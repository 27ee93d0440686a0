#include "sandboxing/seccomp.hpp"

#include <gtest/gtest.h>
#include <seccomp.h>
#include <sandboxing/seccomp_rules.hpp>

#include <algorithm>

namespace sb = sandgate::sandboxing;

TEST(seccomp, allow_list_leaves_out_calls_that_reach_beyond_the_sandbox) {
  const auto& allowed = sb::allowed_syscalls();
  for (const char* refused : {"mount",
                              "umount2",
                              "unshare",
                              "setns",
                              "clone",
                              "clone3",
                              "ptrace",
                              "process_vm_readv",
                              "process_vm_writev",
                              "keyctl",
                              "add_key",
                              "request_key",
                              "bpf",
                              "perf_event_open",
                              "userfaultfd",
                              "io_uring_setup",
                              "io_uring_enter",
                              "io_uring_register",
                              "kexec_load",
                              "kexec_file_load",
                              "init_module",
                              "finit_module",
                              "delete_module",
                              "reboot",
                              "swapon",
                              "swapoff",
                              "syslog",
                              "acct",
                              "quotactl",
                              "open_by_handle_at",
                              "pivot_root",
                              "chroot",
                              "socket",
                              "socketpair",
                              "fsopen",
                              "fsmount",
                              "move_mount",
                              "open_tree",
                              "mount_setattr",
                              "name_to_handle_at",
                              "pidfd_getfd",
                              "kcmp",
                              "process_madvise"}) {
    EXPECT_EQ(std::count(allowed.begin(), allowed.end(), refused), 0) << refused;
  }
}

TEST(seccomp, allow_list_names_are_known_and_unique) {
  auto names = sb::allowed_syscalls();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  int resolved = 0;
  for (const auto& name : names) {
    if (seccomp_syscall_resolve_name(name.c_str()) != __NR_SCMP_ERROR) ++resolved;
  }
  EXPECT_GT(resolved, static_cast<int>(names.size()) * 9 / 10);
}

TEST(seccomp, embedded_program_is_what_libseccomp_compiles_from_the_rules) {
  // The build compiles the rules once; a stale embedded program would mean
  // the sandbox runs other rules than the ones in seccomp_rules.cpp.
  const std::string fresh = sb::compile_seccomp_filter();
  EXPECT_GT(fresh.size(), 100u * 8);
  EXPECT_EQ(sb::seccomp_program(), fresh);
}
