#include "sandboxing/egress_rules.hpp"

#include <gtest/gtest.h>

namespace sb = sandgate::sandboxing;
using json = nlohmann::json;

namespace {

sb::network_policy parse(const char* text) {
  return sb::parse_network_policy(json::parse(text), "network");
}

const std::vector<sb::ip_address> host_own = {*sb::parse_ip("203.0.113.9"), *sb::parse_ip("8.8.4.4")};

sb::egress_decision target(const sb::network_policy& p, const char* host, std::uint16_t port = 443) {
  return sb::check_target(p, host, port, host_own);
}

sb::egress_decision address(const sb::network_policy& p, const char* a, bool literal = false) {
  return sb::check_address(p, *sb::parse_ip(a), literal, host_own);
}

}  // namespace

TEST(egress_rules, allow_list_by_name_and_port) {
  const auto p = parse(R"({"mode": "allow", "hosts": ["files.example.org", "*.example.com"]})");
  EXPECT_TRUE(target(p, "files.example.org").allowed);
  EXPECT_TRUE(target(p, "a.example.com", 80).allowed);
  EXPECT_EQ(target(p, "evil.example.org").reason,
            "host evil.example.org is not in the sandbox's allowed hosts");
  EXPECT_EQ(target(p, "files.example.org", 22).reason, "port 22 is not an allowed port");
  EXPECT_FALSE(target(p, "").allowed);
  EXPECT_FALSE(target(p, "*.example.com").allowed);
  EXPECT_FALSE(target(p, "127.1").allowed);
  EXPECT_FALSE(target(p, "2130706433").allowed);
}

TEST(egress_rules, ip_literals_only_by_cidrs) {
  const auto p = parse(R"({"mode": "allow", "hosts": ["a.example"], "cidrs": ["198.51.100.0/24"]})");
  EXPECT_TRUE(target(p, "198.51.100.7").allowed);  // documentation range, named by a /24
  EXPECT_FALSE(target(p, "93.184.216.34").allowed);
  for (const char* refused :
       {"127.0.0.1", "127.0.0.2", "169.254.169.254", "::1", "::ffff:127.0.0.1", "0.0.0.0", "::", "fe80::1",
        "fd00::1", "10.0.0.1", "192.168.0.1", "224.0.0.1", "ff02::1"})
    EXPECT_FALSE(target(p, refused).allowed) << refused;
}

TEST(egress_rules, refused_ranges_even_for_allowed_names) {
  const auto p = parse(R"({"mode": "allow", "hosts": ["*.example"]})");
  for (const char* refused :
       {"127.0.0.1", "127.0.0.2", "169.254.169.254", "10.0.0.1", "172.16.0.1", "192.168.1.1", "100.64.0.1",
        "0.0.0.0", "224.0.0.1", "255.255.255.255", "::", "::1", "fe80::1", "fc00::1", "ff02::1",
        "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1", "64:ff9b::7f00:1"})
    EXPECT_FALSE(address(p, refused).allowed) << refused;
  EXPECT_TRUE(address(p, "93.184.216.34").allowed);
  EXPECT_TRUE(address(p, "2606:4700::1111").allowed);
}

TEST(egress_rules, the_hosts_own_addresses_are_refused) {
  const auto p = parse(R"("open")");
  EXPECT_EQ(address(p, "8.8.4.4").reason, "8.8.4.4 is an address of the gateway's host");
  EXPECT_FALSE(address(p, "::ffff:8.8.4.4").allowed);
  EXPECT_TRUE(address(p, "8.8.8.8").allowed);
}

TEST(egress_rules, a_cidr_names_a_refused_range_only_when_as_specific) {
  const auto exact = parse(R"({"mode": "allow", "hosts": ["*.test"], "cidrs": ["127.0.0.1/32"]})");
  EXPECT_TRUE(address(exact, "127.0.0.1").allowed);
  EXPECT_TRUE(address(exact, "127.0.0.1", true).allowed);
  EXPECT_TRUE(address(exact, "::ffff:127.0.0.1", true).allowed);  // the same address, mapped
  EXPECT_FALSE(address(exact, "127.0.0.2").allowed);
  EXPECT_FALSE(address(exact, "::1").allowed);
  const auto everything = parse(R"({"mode": "allow", "hosts": ["*.test"], "cidrs": ["0.0.0.0/0", "::/0"]})");
  EXPECT_FALSE(address(everything, "127.0.0.1").allowed);
  EXPECT_FALSE(address(everything, "169.254.169.254").allowed);
  EXPECT_FALSE(address(everything, "::1").allowed);
  EXPECT_TRUE(address(everything, "93.184.216.34", true).allowed);
  const auto link_local = parse(R"({"mode": "allow", "cidrs": ["169.254.0.0/16"]})");
  EXPECT_TRUE(address(link_local, "169.254.169.254", true).allowed);
}

TEST(egress_rules, open_allows_public_names_and_literals) {
  const auto p = parse(R"({"mode": "open", "ports": [443]})");
  EXPECT_TRUE(target(p, "anything.example").allowed);
  EXPECT_TRUE(target(p, "93.184.216.34").allowed);
  EXPECT_FALSE(target(p, "127.0.0.1").allowed);
  EXPECT_FALSE(target(p, "anything.example", 80).allowed);
}

TEST(egress_rules, nothing_passes_without_egress) {
  for (const char* mode : {R"("none")", R"("loopback")"}) {
    EXPECT_FALSE(target(parse(mode), "a.example").allowed);
    EXPECT_FALSE(address(parse(mode), "93.184.216.34").allowed);
  }
}
