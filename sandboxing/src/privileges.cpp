#include "sandboxing/privileges.hpp"

#include <grp.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "sandboxing/sys_error.hpp"

namespace sandgate::sandboxing {
namespace {

void set_limit(int resource, rlim_t value, const char* name) {
  const rlimit limit{value, value};
  check_sys(::setrlimit(resource, &limit),
            std::string("setrlimit(") + name + ", " + std::to_string(value) + ")");
}

int last_capability() {
  int last = CAP_LAST_CAP;
  while (::prctl(PR_CAPBSET_READ, last + 1, 0, 0, 0) >= 0)
    ++last;
  return last;
}

}  // namespace

void apply_rlimits(const limits& l) {
  set_limit(RLIMIT_NOFILE, l.open_files, "RLIMIT_NOFILE");
  set_limit(RLIMIT_FSIZE, l.file_size_bytes, "RLIMIT_FSIZE");
  set_limit(RLIMIT_NPROC, l.pids, "RLIMIT_NPROC");
  set_limit(RLIMIT_CORE, 0, "RLIMIT_CORE");
}

void drop_privileges(std::uint32_t uid, std::uint32_t gid, bool may_setgroups) {
  for (int cap = 0; cap <= last_capability(); ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == -1 && errno != EINVAL) {
      throw sys_error("prctl(PR_CAPBSET_DROP, " + std::to_string(cap) + ")", errno);
    }
  }
  check_sys(::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "prctl(PR_CAP_AMBIENT_CLEAR_ALL)");
  check_sys(::prctl(PR_SET_SECUREBITS,
                    SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
                        SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
                    0, 0, 0),
            "prctl(PR_SET_SECUREBITS, NOROOT|NO_CAP_AMBIENT_RAISE, locked)");
  if (may_setgroups) {
    const gid_t groups[] = {gid};
    check_sys(::setgroups(1, groups), "setgroups([" + std::to_string(gid) + "])");
  }
  check_sys(::setresgid(gid, gid, gid), "setresgid(" + std::to_string(gid) + ")");
  check_sys(::setresuid(uid, uid, uid), "setresuid(" + std::to_string(uid) + ")");
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  check_sys(::syscall(SYS_capset, &header, data), "capset(all empty)");
}

void set_no_new_privs() {
  check_sys(::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)");
}

bool holds_no_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) == -1) return false;
  for (const auto& d : data) {
    if (d.effective != 0 || d.permitted != 0 || d.inheritable != 0) return false;
  }
  return true;
}

}  // namespace sandgate::sandboxing
