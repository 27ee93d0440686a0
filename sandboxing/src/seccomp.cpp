#include "sandboxing/seccomp.hpp"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <iterator>

#include "sandboxing/sys_error.hpp"

namespace sandgate::sandboxing {
namespace {

// sandbox_seccomp_program[]: written by sandgate_seccomp_gen at build time.
#include "seccomp_program.inc"

}  // namespace

std::string_view seccomp_program() {
  return {reinterpret_cast<const char*>(sandbox_seccomp_program), sizeof sandbox_seccomp_program};
}

void load_seccomp_filter() {
  sock_fprog program{static_cast<unsigned short>(std::size(sandbox_seccomp_program)),
                     const_cast<sock_filter*>(sandbox_seccomp_program)};
  check_sys(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program),
            "seccomp(SECCOMP_SET_MODE_FILTER, " + std::to_string(program.len) + " instructions)");
}

}  // namespace sandgate::sandboxing
