#include "sandboxing/seccomp_rules.hpp"

#include <linux/netlink.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "sandboxing/seccomp.hpp"
#include "sandboxing/unique_fd.hpp"

namespace sandgate::sandboxing {
namespace {

struct filter_deleter {
  void operator()(void* ctx) const noexcept { seccomp_release(ctx); }
};
using filter_ptr = std::unique_ptr<void, filter_deleter>;

void check(int rc, const std::string& call) {
  if (rc < 0) throw std::runtime_error(call + ": " + std::generic_category().message(-rc));
}

[[noreturn]] void fail(const std::string& call) {
  throw std::runtime_error(call + ": " + std::generic_category().message(errno));
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

// Allows ioctl for every request except the given ones. The kernel reads the
// request as 32 bits, so the rules look only at those: a walk down the bits
// that allows each subtree holding no refused value with one masked compare.
void allow_ioctl_subtree(scmp_filter_ctx ctx, const std::vector<std::uint32_t>& refused, std::uint32_t prefix,
                         int fixed_bits) {
  const std::uint32_t mask = fixed_bits == 0 ? 0 : ~std::uint32_t{0} << (32 - fixed_bits);
  std::vector<std::uint32_t> inside;
  for (std::uint32_t r : refused) {
    if ((r & mask) == prefix) inside.push_back(r);
  }
  if (inside.empty()) {
    check(
        seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, mask, prefix)),
        "seccomp_rule_add(ioctl)");
    return;
  }
  if (fixed_bits == 32) return;  // a refused request
  const std::uint32_t bit = std::uint32_t{1} << (31 - fixed_bits);
  allow_ioctl_subtree(ctx, inside, prefix, fixed_bits + 1);
  allow_ioctl_subtree(ctx, inside, prefix | bit, fixed_bits + 1);
}

void allow_ioctl_except(scmp_filter_ctx ctx, const std::vector<std::uint32_t>& refused) {
  allow_ioctl_subtree(ctx, refused, 0, 0);
}

}  // namespace

std::string compile_seccomp_filter() {
  filter_ptr ctx(seccomp_init(SCMP_ACT_ERRNO(EPERM)));
  if (!ctx) throw std::runtime_error("seccomp_init(SCMP_ACT_ERRNO(EPERM)) failed");
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
  allow_ioctl_except(ctx.get(), {TIOCSTI, TIOCLINUX});
  // libseccomp 2.5 exports only to a descriptor.
  unique_fd out(::memfd_create("seccomp-bpf", MFD_CLOEXEC));
  if (!out) fail("memfd_create(seccomp-bpf)");
  check(seccomp_export_bpf(ctx.get(), out.get()), "seccomp_export_bpf");
  std::string program;
  char buffer[4096];
  for (off_t offset = 0;;) {
    const ssize_t n = ::pread(out.get(), buffer, sizeof buffer, offset);
    if (n < 0) fail("pread(seccomp-bpf)");
    if (n == 0) break;
    program.append(buffer, static_cast<std::size_t>(n));
    offset += n;
  }
  return program;
}

}  // namespace sandgate::sandboxing
