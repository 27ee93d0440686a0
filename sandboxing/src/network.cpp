#include "sandboxing/network.hpp"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "sandboxing/sys_error.hpp"
#include "sandboxing/unique_fd.hpp"

namespace sandgate::sandboxing {

void setup_network(network_mode mode) {
  // Egress goes through 127.0.0.1:3128: lo must be up for it too.
  if (mode == network_mode::none) return;
  unique_fd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) throw sys_error("socket(AF_INET, SOCK_DGRAM)", errno);
  ifreq request{};
  std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  check_sys(::ioctl(fd.get(), SIOCGIFFLAGS, &request), "ioctl(lo, SIOCGIFFLAGS)");
  request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP | IFF_RUNNING);
  check_sys(::ioctl(fd.get(), SIOCSIFFLAGS, &request), "ioctl(lo, SIOCSIFFLAGS, IFF_UP)");
}

}  // namespace sandgate::sandboxing
