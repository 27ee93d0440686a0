#include "sandboxing/network_policy.hpp"

#include <gtest/gtest.h>

#include "sandboxing/policy.hpp"

namespace sb = sandgate::sandboxing;
using json = nlohmann::json;

namespace {

sb::network_policy parse(const char* text) {
  return sb::parse_network_policy(json::parse(text), "network");
}

std::string error_of(const char* text) {
  try {
    (void)parse(text);
  } catch (const sb::policy_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(network_policy, bare_modes) {
  EXPECT_EQ(parse(R"("none")").mode, sb::network_mode::none);
  EXPECT_EQ(parse(R"("loopback")").mode, sb::network_mode::loopback);
  EXPECT_EQ(parse(R"("open")").mode, sb::network_mode::open);
  EXPECT_EQ(parse(R"("open")").ports, (std::vector<std::uint16_t>{80, 443}));
}

TEST(network_policy, allow_list_parses_and_round_trips) {
  const auto p = parse(R"({"mode": "allow", "hosts": ["Files.Example.org.", "*.example.com"],
                           "cidrs": ["198.51.100.0/24", "2001:db8::/32"], "ports": [443, 80, 443],
                           "max_connections": 8, "bytes_per_second": 1048576})");
  EXPECT_EQ(p.hosts, (std::vector<std::string>{"files.example.org", "*.example.com"}));
  ASSERT_EQ(p.cidrs.size(), 2u);
  EXPECT_EQ(p.ports, (std::vector<std::uint16_t>{80, 443}));
  EXPECT_EQ(p.max_connections, 8u);
  EXPECT_EQ(sb::parse_network_policy(sb::to_json(p), "network"), p);
  EXPECT_EQ(sb::to_json(parse(R"("none")")), json("none"));
}

TEST(network_policy, errors_name_the_field) {
  EXPECT_NE(error_of(R"("internet")").find("network: must be"), std::string::npos);
  EXPECT_NE(error_of(R"({"hosts": []})").find("network.mode: is required"), std::string::npos);
  EXPECT_NE(error_of(R"({"mode": "allow", "hosts": ["a b"]})").find("network.hosts[0]"), std::string::npos);
  EXPECT_NE(error_of(R"({"mode": "allow", "hosts": ["10.0.0.1"]})").find("put it in cidrs"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"mode": "allow", "cidrs": ["10.0.0.1/8"]})").find("network.cidrs[0]"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"mode": "allow", "ports": [0]})").find("network.ports[0]"), std::string::npos);
  EXPECT_NE(error_of(R"({"mode": "allow", "ports": [70000]})").find("at most 65535"), std::string::npos);
  EXPECT_NE(error_of(R"({"mode": "open", "hosts": ["a.example"]})").find("network.hosts"), std::string::npos);
  EXPECT_NE(error_of(R"({"mode": "allow", "proxy": 1})").find("network.proxy: unknown field"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"mode": "allow", "max_connections": 0})").find("network.max_connections"),
            std::string::npos);
}

TEST(network_policy, wildcards_match_only_below) {
  EXPECT_TRUE(sb::host_matches("*.example.com", "a.example.com"));
  EXPECT_TRUE(sb::host_matches("*.example.com", "a.b.example.com"));
  EXPECT_FALSE(sb::host_matches("*.example.com", "example.com"));
  EXPECT_FALSE(sb::host_matches("*.example.com", "badexample.com"));
  EXPECT_FALSE(sb::host_matches("*.example.com", "example.com.evil.org"));
  EXPECT_TRUE(sb::host_matches("files.example.org", "files.example.org"));
  EXPECT_FALSE(sb::host_matches("files.example.org", "x.files.example.org"));
}

TEST(network_policy, ceiling_allows_less_never_more) {
  const auto ceiling = parse(R"({"mode": "allow", "hosts": ["*.example.com", "files.example.org"],
                                 "cidrs": ["198.51.100.0/24", "127.0.0.1/32"], "ports": [80, 443, 8080]})");
  EXPECT_FALSE(sb::exceeds(parse(R"("none")"), ceiling));
  EXPECT_FALSE(sb::exceeds(parse(R"("loopback")"), ceiling));
  EXPECT_FALSE(sb::exceeds(
      parse(
          R"({"mode": "allow", "hosts": ["a.example.com", "*.b.example.com"], "cidrs": ["198.51.100.128/25"],
               "ports": [443]})"),
      ceiling));
  EXPECT_EQ(*sb::exceeds(parse(R"({"mode": "allow", "hosts": ["evil.example.org"]})"), ceiling),
            "host evil.example.org is outside this gateway's network ceiling");
  EXPECT_TRUE(sb::exceeds(parse(R"({"mode": "allow", "hosts": ["*.com"]})"), ceiling));
  EXPECT_TRUE(sb::exceeds(parse(R"({"mode": "allow", "cidrs": ["198.51.0.0/16"]})"), ceiling));
  EXPECT_TRUE(sb::exceeds(parse(R"({"mode": "allow", "ports": [22]})"), ceiling));
  EXPECT_TRUE(sb::exceeds(parse(R"("open")"), ceiling));
  EXPECT_TRUE(sb::exceeds(parse(R"({"mode": "allow", "max_connections": 1000})"), ceiling));
  EXPECT_TRUE(sb::exceeds(parse(R"("loopback")"), parse(R"("none")")));
  // "open" covers any name and public cidrs, not refused ranges it does not name.
  const auto open = parse(R"({"mode": "open", "cidrs": ["127.0.0.1/32"]})");
  EXPECT_FALSE(sb::exceeds(parse(R"({"mode": "allow", "hosts": ["anything.example"]})"), open));
  EXPECT_FALSE(sb::exceeds(parse(R"({"mode": "allow", "cidrs": ["8.8.8.0/24", "127.0.0.1/32"]})"), open));
  EXPECT_TRUE(sb::exceeds(parse(R"({"mode": "allow", "cidrs": ["10.0.0.0/8"]})"), open));
}

TEST(network_policy, policy_checks_network_against_its_ceiling) {
  EXPECT_NO_THROW(sb::parse_policy(R"({"network": "none", "network_ceiling": {"mode": "open"}})"));
  EXPECT_THROW(sb::parse_policy(R"({"network": "open", "network_ceiling": "none"})"), sb::policy_error);
  const auto p = sb::parse_policy(R"({"network": {"mode": "allow", "hosts": ["a.example"]}})");
  EXPECT_EQ(p.network_ceiling, p.network);  // absent: the default is the ceiling
}

TEST(network_policy, non_tls_ports_are_ports_the_ceiling_allows_for_other_protocols) {
  const auto p =
      parse(R"({"mode": "allow", "hosts": ["a.example"], "ports": [22, 443], "non_tls_ports": [22, 22]})");
  EXPECT_EQ(p.non_tls_ports, (std::vector<std::uint16_t>{22}));
  EXPECT_EQ(sb::parse_network_policy(sb::to_json(p), "network"), p);
  EXPECT_TRUE(parse(R"({"mode": "allow"})").non_tls_ports.empty());  // every tunnel TLS by default
  EXPECT_NE(error_of(R"({"mode": "allow", "ports": [443], "non_tls_ports": [22]})")
                .find("network.non_tls_ports: port 22 is not in ports"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"mode": "allow", "non_tls_ports": [0]})").find("network.non_tls_ports[0]"),
            std::string::npos);
  const auto ceiling = parse(R"({"mode": "allow", "hosts": ["*.example"], "ports": [22, 443, 8080],
                                 "non_tls_ports": [22]})");
  EXPECT_FALSE(sb::exceeds(p, ceiling));
  EXPECT_EQ(*sb::exceeds(parse(R"({"mode": "allow", "ports": [8080], "non_tls_ports": [8080]})"), ceiling),
            "non_tls_ports 8080 is outside this gateway's network ceiling");
}
