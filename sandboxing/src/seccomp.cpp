#include "sandboxing/seccomp.hpp"

#include <linux/netlink.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/socket.h>

#include <cerrno>
#include <memory>

#include "sandboxing/sys_error.hpp"

namespace sandgate::sandboxing {
namespace {

struct filter_deleter {
  void operator()(void* ctx) const noexcept { seccomp_release(ctx); }
};
using filter_ptr = std::unique_ptr<void, filter_deleter>;

void check(int rc, const std::string& call) {
  if (rc < 0) throw sys_error(call, -rc);
}

constexpr unsigned long namespace_flags = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
                                          CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP |
                                          0x00000080 /* CLONE_NEWTIME */;

void allow_sockets(scmp_filter_ctx ctx) {
  const int socket_nr = SCMP_SYS(socket);
  check(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, socket_nr, 1, SCMP_A0(SCMP_CMP_EQ, AF_UNIX)),
        "seccomp_rule_add(socket AF_UNIX)");
  for (scmp_datum_t family : {AF_INET, AF_INET6}) {
    for (scmp_datum_t type : {SOCK_STREAM, SOCK_DGRAM}) {
      check(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, socket_nr, 2, SCMP_A0(SCMP_CMP_EQ, family),
                             SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, type)),
            "seccomp_rule_add(socket AF_INET*)");
    }
  }
  check(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, socket_nr, 2, SCMP_A0(SCMP_CMP_EQ, AF_NETLINK),
                         SCMP_A2(SCMP_CMP_EQ, NETLINK_ROUTE)),
        "seccomp_rule_add(socket AF_NETLINK NETLINK_ROUTE)");
  // socketpair only makes connected pairs of AF_UNIX sockets.
  check(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socketpair), 1, SCMP_A0(SCMP_CMP_EQ, AF_UNIX)),
        "seccomp_rule_add(socketpair AF_UNIX)");
}

}  // namespace

void load_seccomp_filter() {
  filter_ptr ctx(seccomp_init(SCMP_ACT_ERRNO(EPERM)));
  if (!ctx) throw sys_error("seccomp_init(SCMP_ACT_ERRNO(EPERM))", ENOMEM);
  for (const auto& name : allowed_syscalls()) {
    const int nr = seccomp_syscall_resolve_name(name.c_str());
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    check(seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, nr, 0), "seccomp_rule_add(" + name + ")");
  }
  check(seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0), "seccomp_rule_add(clone3)");
  check(seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                         SCMP_A0(SCMP_CMP_MASKED_EQ, namespace_flags, 0)),
        "seccomp_rule_add(clone without namespace flags)");
  allow_sockets(ctx.get());
  check(seccomp_load(ctx.get()), "seccomp_load");
}

}  // namespace sandgate::sandboxing
