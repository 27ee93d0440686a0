#include "sandbox_socket.hpp"

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <system_error>

namespace sandgate::gateway {
namespace {

std::string failed(const std::string& call) {
  return call + ": " + std::generic_category().message(errno);
}

// The gateway's own network namespace, opened once (the main thread's, where sockets are made).
int own_namespace() {
  static const int fd = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  return fd;
}

// Brings lo up in the current namespace when it is down.
bool loopback_up(std::string& error) {
  const sandboxing::unique_fd probe(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!probe) {
    error = failed("socket(AF_INET, SOCK_DGRAM) in the sandbox");
    return false;
  }
  ifreq request{};
  std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(probe.get(), SIOCGIFFLAGS, &request) != 0) {
    error = failed("ioctl(lo, SIOCGIFFLAGS) in the sandbox");
    return false;
  }
  if (request.ifr_flags & IFF_UP) return true;
  request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP | IFF_RUNNING);
  if (::ioctl(probe.get(), SIOCSIFFLAGS, &request) != 0) {
    error = failed("ioctl(lo, SIOCSIFFLAGS, IFF_UP) in the sandbox");
    return false;
  }
  return true;
}

}  // namespace

sandboxing::unique_fd socket_in_sandbox(int supervisor, std::string& error) {
  const int home = own_namespace();
  if (home < 0) {
    error = failed("open(/proc/thread-self/ns/net)");
    return {};
  }
  if (::setns(supervisor, CLONE_NEWNET) != 0) {
    error = failed("setns(supervisor, CLONE_NEWNET)");
    return {};
  }
  sandboxing::unique_fd socket;
  if (loopback_up(error)) {
    socket.reset(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!socket) error = failed("socket(AF_INET, SOCK_STREAM) in the sandbox");
  }
  if (::setns(home, CLONE_NEWNET) != 0) {
    // The thread cannot get back: nothing it does may happen in the sandbox's namespace.
    std::terminate();
  }
  return socket;
}

}  // namespace sandgate::gateway
