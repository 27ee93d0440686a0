#include "sandboxing/ip_address.hpp"

#include <gtest/gtest.h>

namespace sb = sandgate::sandboxing;

namespace {

sb::ip_address ip(const char* text) {
  auto a = sb::parse_ip(text);
  EXPECT_TRUE(a) << text;
  return a.value_or(sb::ip_address{});
}

sb::ip_network net(const char* text) {
  auto n = sb::parse_network(text);
  EXPECT_TRUE(n) << text;
  return n.value_or(sb::ip_network{});
}

std::string range_of(const char* text) {
  const auto r = sb::special_range_of(ip(text));
  return r ? std::string(r->name) : "public";
}

}  // namespace

TEST(ip_address, parses_and_prints_both_families) {
  EXPECT_EQ(sb::to_string(ip("192.0.2.1")), "192.0.2.1");
  EXPECT_TRUE(ip("192.0.2.1").v4);
  EXPECT_EQ(sb::to_string(ip("2001:DB8::1")), "2001:db8::1");
  EXPECT_FALSE(ip("::1").v4);
}

TEST(ip_address, refuses_ambiguous_forms) {
  for (const char* bad : {"", "127.1", "0x7f.0.0.1", "2130706433", "1.2.3.4.5", "[::1]", "fe80::1%eth0",
                          "01.2.3.4", "localhost", "1.2.3.256"})
    EXPECT_FALSE(sb::parse_ip(bad)) << bad;
}

TEST(ip_address, unmaps_ipv4_inside_ipv6) {
  EXPECT_EQ(sb::unmapped(ip("::ffff:127.0.0.1")), ip("127.0.0.1"));
  EXPECT_EQ(sb::unmapped(ip("::ffff:7f00:1")), ip("127.0.0.1"));
  EXPECT_EQ(sb::unmapped(ip("64:ff9b::a9fe:a9fe")), ip("169.254.169.254"));
  EXPECT_EQ(sb::unmapped(ip("::10.0.0.1")), ip("10.0.0.1"));
  EXPECT_EQ(sb::unmapped(ip("::1")), ip("::1"));  // loopback itself, not 0.0.0.1
  EXPECT_EQ(sb::unmapped(ip("2001:db8::1")), ip("2001:db8::1"));
}

TEST(ip_network, matches_by_prefix) {
  EXPECT_TRUE(net("198.51.100.0/24").contains(ip("198.51.100.255")));
  EXPECT_FALSE(net("198.51.100.0/24").contains(ip("198.51.101.0")));
  EXPECT_TRUE(net("0.0.0.0/0").contains(ip("8.8.8.8")));
  EXPECT_FALSE(net("0.0.0.0/0").contains(ip("::1")));  // families never mix
  EXPECT_TRUE(net("127.0.0.1").contains(ip("127.0.0.1")));
  EXPECT_EQ(net("127.0.0.1").prefix, 32u);
  EXPECT_TRUE(net("fc00::/7").contains(ip("fd12:3456::1")));
  EXPECT_TRUE(net("10.0.0.0/8").contains(net("10.1.0.0/16")));
  EXPECT_FALSE(net("10.1.0.0/16").contains(net("10.0.0.0/8")));
}

TEST(ip_network, refuses_malformed_cidrs) {
  for (const char* bad :
       {"10.0.0.1/8", "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/-1", "::/129", "10.0.0.0/8x", "example.com/24"})
    EXPECT_FALSE(sb::parse_network(bad)) << bad;
}

TEST(special_ranges, name_every_refused_range) {
  EXPECT_EQ(range_of("127.0.0.1"), "loopback");
  EXPECT_EQ(range_of("127.0.0.2"), "loopback");
  EXPECT_EQ(range_of("169.254.169.254"), "link-local");
  EXPECT_EQ(range_of("10.1.2.3"), "private");
  EXPECT_EQ(range_of("172.31.0.1"), "private");
  EXPECT_EQ(range_of("192.168.1.1"), "private");
  EXPECT_EQ(range_of("100.64.0.1"), "shared (CGNAT)");
  EXPECT_EQ(range_of("0.0.0.0"), "unspecified");
  EXPECT_EQ(range_of("224.0.0.251"), "multicast");
  EXPECT_EQ(range_of("255.255.255.255"), "broadcast");
  EXPECT_EQ(range_of("::"), "unspecified");
  EXPECT_EQ(range_of("::1"), "loopback");
  EXPECT_EQ(range_of("fe80::1"), "link-local");
  EXPECT_EQ(range_of("fd00::1"), "unique local (private)");
  EXPECT_EQ(range_of("ff02::1"), "multicast");
  EXPECT_EQ(range_of("::ffff:127.0.0.1"), "loopback");
  EXPECT_EQ(range_of("::ffff:169.254.169.254"), "link-local");
  EXPECT_EQ(range_of("::ffff:10.0.0.1"), "private");
  EXPECT_EQ(range_of("64:ff9b::7f00:1"), "loopback");
  EXPECT_EQ(range_of("3fff:0:1b::2"), "documentation");
  EXPECT_EQ(range_of("64:ff9b:1::a00:1"), "local-use NAT64");
  EXPECT_EQ(range_of("8.8.8.8"), "public");
  EXPECT_EQ(range_of("2606:4700::1111"), "public");
  EXPECT_EQ(range_of("172.32.0.1"), "public");
}
