// Setup steps run for real, each in a forked child so the test process keeps
// its privileges: rlimits, privilege drop, seccomp, network.
#include <errno.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <functional>

#include "sandboxing/network.hpp"
#include "sandboxing/privileges.hpp"
#include "sandboxing/seccomp.hpp"

namespace sb = sandgate::sandboxing;

namespace {

// Runs body in a child; returns its exit code (body's return value), or
// 100 + the exception count when it threw.
int in_child(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    int code = 0;
    try {
      code = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      code = 101;
    }
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

}  // namespace

TEST(steps, rlimits_are_set_hard_and_soft) {
  EXPECT_EQ(in_child([] {
              sb::limits l;
              l.open_files = 64;
              l.file_size_bytes = 4 << 20;
              sb::apply_rlimits(l);
              rlimit r{};
              ::getrlimit(RLIMIT_NOFILE, &r);
              if (r.rlim_cur != 64 || r.rlim_max != 64) return 1;
              ::getrlimit(RLIMIT_FSIZE, &r);
              if (r.rlim_max != (4u << 20)) return 2;
              ::getrlimit(RLIMIT_CORE, &r);
              return r.rlim_max == 0 ? 0 : 3;
            }),
            0);
}

TEST(steps, seccomp_filter_refuses_namespaces_and_raw_sockets) {
  EXPECT_EQ(in_child([] {
              sb::set_no_new_privs();
              sb::load_seccomp_filter();
              if (::syscall(SYS_unshare, CLONE_NEWUSER) != -1 || errno != EPERM) return 1;
              if (::socket(AF_PACKET, SOCK_RAW, 0) != -1 || errno != EPERM) return 2;
              if (::socket(AF_INET, SOCK_RAW, 1) != -1 || errno != EPERM) return 3;
              if (::syscall(SYS_clone3, nullptr, 0) != -1 || errno != ENOSYS) return 4;
              if (::syscall(SYS_ptrace, 0, 0, 0, 0) != -1 || errno != EPERM) return 5;
              const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
              if (fd < 0) return 6;
              ::close(fd);
              return ::getpid() > 0 ? 0 : 7;
            }),
            0);
}

TEST(steps, dropping_privileges_leaves_no_capability) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to change uid";
  EXPECT_EQ(in_child([] {
              sb::drop_privileges(65534, 65534, true);
              if (::getuid() != 65534 || ::getgid() != 65534) return 1;
              if (!sb::holds_no_capabilities()) return 2;
              return ::setuid(0) == -1 ? 0 : 3;
            }),
            0);
}

TEST(steps, loopback_comes_up_in_a_new_network_namespace) {
  EXPECT_EQ(in_child([] {
              if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) == -1) return 50;
              auto lo_up = [] {
                const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
                ifreq request{};
                std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
                ::ioctl(fd, SIOCGIFFLAGS, &request);
                ::close(fd);
                return (request.ifr_flags & IFF_UP) != 0;
              };
              sb::setup_network(sb::network_mode::none);
              if (lo_up()) return 1;
              sb::setup_network(sb::network_mode::loopback);
              return lo_up() ? 0 : 2;
            }),
            0);
}
