// The seccomp-bpf filter for programs in the sandbox: an allow-list of the
// system calls that Python (numpy, pandas, matplotlib), bash and coreutils
// use. Anything else fails with EPERM; clone3 fails with ENOSYS so that libc
// falls back to clone, whose namespace flags are refused; socket() is allowed
// for AF_UNIX, AF_INET/AF_INET6 stream and datagram, and AF_NETLINK route only;
// ioctl for every request but TIOCSTI and TIOCLINUX. The rules live in
// seccomp_rules.cpp; libseccomp compiles them at build time, so a spawn only
// loads the finished program.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sandgate::sandboxing {

// The allowed system calls without argument rules.
const std::vector<std::string>& allowed_syscalls();

// The embedded filter program (struct sock_filter array, host byte order).
std::string_view seccomp_program();

// Loads the filter into the calling thread (no_new_privs must be set);
// throws sys_error naming the system call.
void load_seccomp_filter();

}  // namespace sandgate::sandboxing
