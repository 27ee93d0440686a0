// The host's own addresses as the egress proxy sees them: an address added
// to an interface while it runs is in the very next list (no wait, no
// polling), and one removed is gone. Runs in a network namespace of its own
// (made for one thread), so the host's interfaces are not touched.
#include "host_addresses.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

namespace sandgate::egress {
namespace {

namespace sb = sandgate::sandboxing;

bool listed(host_addresses& own, const char* address) {
  const auto* list = own.current();
  return list && std::find(list->begin(), list->end(), *sb::parse_ip(address)) != list->end();
}

TEST(HostAddresses, AnAddressAddedOrRemovedIsInTheNextList) {
  std::string failure, skipped;
  // A thread's network namespace is its own: unshare here leaves the test process's.
  std::thread([&] {
    if (::unshare(CLONE_NEWNET) != 0) {
      skipped = "unshare(CLONE_NEWNET) needs root";
      return;
    }
    host_addresses own;
    if (std::system("ip link set lo up") != 0) {
      failure = "ip link set lo up failed";
      return;
    }
    if (listed(own, "192.0.2.7") || listed(own, "3fff:0:1b::2")) failure = "listed before it was added";
    for (int round = 0; round < 20 && failure.empty(); ++round) {
      if (std::system("ip addr add 192.0.2.7/32 dev lo && ip -6 addr add 3fff:0:1b::2/128 dev lo nodad") !=
          0) {
        failure = "ip addr add failed";
        break;
      }
      if (!listed(own, "192.0.2.7"))
        failure = "an IPv4 address just added is not listed, round " + std::to_string(round);
      if (!listed(own, "3fff:0:1b::2")) failure = "an IPv6 address just added is not listed";
      if (std::system("ip addr del 192.0.2.7/32 dev lo && ip -6 addr del 3fff:0:1b::2/128 dev lo") != 0) {
        failure = "ip addr del failed";
        break;
      }
      if (listed(own, "192.0.2.7") || listed(own, "3fff:0:1b::2"))
        failure = "a removed address is still listed";
    }
  }).join();
  if (!skipped.empty()) GTEST_SKIP() << skipped;
  EXPECT_EQ(failure, "");
}

}  // namespace
}  // namespace sandgate::egress
