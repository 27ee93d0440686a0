// The host's own interface addresses, which egress refuses (a sandbox must not
// reach the gateway's host by one of its public addresses), kept current: a
// route netlink socket subscribed to address changes is read, without
// waiting, before each use, and any change it reports (or a notification the
// kernel had to drop) makes the list be read again. The kernel queues the
// notification before `ip addr add` returns, so an address that appears at
// any time is in the list for the next decision, and an interface added
// later (a floating IP, a rotated IPv6 temporary address) is no way out.
#pragma once

#include <vector>

#include "sandboxing/ip_address.hpp"
#include "sandboxing/unique_fd.hpp"

namespace sandgate::egress {

// The addresses of every interface in the caller's network namespace now (getifaddrs).
[[nodiscard]] std::vector<sandboxing::ip_address> read_host_addresses();

class host_addresses {
 public:
  // Subscribes, then reads the list (in that order: nothing added in between
  // is missed). Throws std::system_error when the netlink socket cannot be made.
  host_addresses();

  // The list as it is now; null while it cannot be read (getifaddrs failed
  // after a change), so that the caller refuses rather than decide on an old list.
  [[nodiscard]] const std::vector<sandboxing::ip_address>* current();

 private:
  // Reads what the kernel queued on the netlink socket; true when it
  // reported a change (or dropped reports) since the last call.
  bool drain();

  sandboxing::unique_fd netlink_;
  std::vector<sandboxing::ip_address> list_;
  bool stale_ = false;  // changed since list_ was read
};

}  // namespace sandgate::egress
