#include "host_addresses.hpp"

#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace sandgate::egress {
namespace sb = sandgate::sandboxing;

std::vector<sb::ip_address> read_host_addresses() {
  std::vector<sb::ip_address> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) throw std::system_error(errno, std::generic_category(), "getifaddrs");
  for (const ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    sb::ip_address a;
    if (i->ifa_addr->sa_family == AF_INET) {
      a.v4 = true;
      std::memcpy(a.bytes.data(), &reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr, 4);
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      std::memcpy(a.bytes.data(), &reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr, 16);
    } else {
      continue;
    }
    out.push_back(a);
  }
  ::freeifaddrs(list);
  return out;
}

host_addresses::host_addresses()
    : netlink_(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE)) {
  if (!netlink_) throw std::system_error(errno, std::generic_category(), "socket(AF_NETLINK, NETLINK_ROUTE)");
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  local.nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
  if (::bind(netlink_.get(), reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0)
    throw std::system_error(errno, std::generic_category(),
                            "bind(NETLINK_ROUTE, RTMGRP_IPV4_IFADDR|RTMGRP_IPV6_IFADDR)");
  list_ = read_host_addresses();
}

bool host_addresses::drain() {
  bool any = false;
  std::array<char, 256> buffer{};  // MSG_TRUNC drops the rest of each message
  for (;;) {
    const auto n = ::recv(netlink_.get(), buffer.data(), buffer.size(), MSG_DONTWAIT | MSG_TRUNC);
    if (n > 0) {
      any = true;  // what changed is not read from the message: the whole list is read again
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == ENOBUFS) {  // the kernel dropped notifications: something changed
      any = true;
      continue;
    }
    return any;  // EAGAIN: nothing more queued
  }
}

const std::vector<sb::ip_address>* host_addresses::current() {
  if (drain()) stale_ = true;
  if (stale_) {
    try {
      list_ = read_host_addresses();
      stale_ = false;
    } catch (const std::system_error&) {
      return nullptr;  // read again at the next use
    }
  }
  return &list_;
}

}  // namespace sandgate::egress
