#include "egress_socket.hpp"

#include <sandboxing/network_policy.hpp>
#include <sandboxing/unique_fd.hpp>

#include <arpa/inet.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

namespace sandgate::gateway {

std::string check_egress_socket(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || len != sizeof addr ||
      addr.sin_family != AF_INET || ntohs(addr.sin_port) != sandboxing::egress_proxy_port ||
      ntohl(addr.sin_addr.s_addr) != INADDR_LOOPBACK)
    return "not a socket bound to 127.0.0.1:" + std::to_string(sandboxing::egress_proxy_port);
  int type = 0;
  len = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
    return "not a TCP socket";
  const sandboxing::unique_fd netns(::ioctl(fd, SIOCGSKNS));
  struct stat socket_ns {};
  struct stat own_ns {};
  if (!netns || ::fstat(netns.get(), &socket_ns) != 0 || ::stat("/proc/self/ns/net", &own_ns) != 0)
    return "its network namespace cannot be told";
  if (socket_ns.st_dev == own_ns.st_dev && socket_ns.st_ino == own_ns.st_ino)
    return "a socket in the gateway's own network namespace, not the sandbox's";
  return "";
}

}  // namespace sandgate::gateway
