// The gateway's check on the socket it copies out of a supervisor for the
// egress proxy, on real sockets: one bound to 127.0.0.1:3128 in a network
// namespace of its own (made by a thread that unshares its network
// namespace, as a sandbox has) passes; the same in the test's own
// namespace, a UDP socket, another port or address do not.

#include "sandboxes/egress_socket.hpp"

#include <sandboxing/network_policy.hpp>
#include <sandboxing/unique_fd.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cerrno>
#include <string>
#include <thread>

namespace {
namespace sg = sandgate::gateway;
using sandgate::sandboxing::unique_fd;

unique_fd bound(int type, const char* address, std::uint16_t port) {
  unique_fd fd(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  ::inet_pton(AF_INET, address, &addr.sin_addr);
  if (!fd || ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) return {};
  return fd;
}

// A socket made by a thread in a network namespace of its own (which only that thread enters).
unique_fd bound_in_new_namespace(int type, const char* address, std::uint16_t port, int& error) {
  unique_fd fd;
  std::thread([&] {
    if (::unshare(CLONE_NEWNET) != 0) {
      error = errno;
      return;
    }
    fd = bound(type, address, port);
  }).join();
  return fd;
}

TEST(egress_socket, a_tcp_socket_on_the_port_in_another_namespace_passes) {
  int error = 0;
  auto fd = bound_in_new_namespace(SOCK_STREAM, "127.0.0.1", sandgate::sandboxing::egress_proxy_port, error);
  if (error == EPERM) GTEST_SKIP() << "unshare(CLONE_NEWNET) needs root";
  ASSERT_TRUE(fd) << error;
  EXPECT_EQ(sg::check_egress_socket(fd.get()), "");
}

TEST(egress_socket, one_in_the_gateways_own_namespace_is_refused) {
  // 3128 may be taken on this host (by a proxy): then there is nothing to check here.
  auto fd = bound(SOCK_STREAM, "127.0.0.1", sandgate::sandboxing::egress_proxy_port);
  if (!fd) GTEST_SKIP() << "127.0.0.1:3128 is taken on this host";
  EXPECT_NE(sg::check_egress_socket(fd.get()).find("the gateway's own network namespace"), std::string::npos);
}

TEST(egress_socket, udp_another_port_or_address_are_refused) {
  int error = 0;
  const auto port = sandgate::sandboxing::egress_proxy_port;
  auto udp = bound_in_new_namespace(SOCK_DGRAM, "127.0.0.1", port, error);
  if (error == EPERM) GTEST_SKIP() << "unshare(CLONE_NEWNET) needs root";
  ASSERT_TRUE(udp);
  EXPECT_EQ(sg::check_egress_socket(udp.get()), "not a TCP socket");
  auto other_port = bound_in_new_namespace(SOCK_STREAM, "127.0.0.1", port + 1, error);
  ASSERT_TRUE(other_port);
  EXPECT_EQ(sg::check_egress_socket(other_port.get()), "not a socket bound to 127.0.0.1:3128");
  auto other_address = bound_in_new_namespace(SOCK_STREAM, "127.0.0.2", port, error);
  ASSERT_TRUE(other_address);
  EXPECT_EQ(sg::check_egress_socket(other_address.get()), "not a socket bound to 127.0.0.1:3128");
  const unique_fd not_bound(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_EQ(sg::check_egress_socket(not_bound.get()), "not a socket bound to 127.0.0.1:3128");
}

}  // namespace
