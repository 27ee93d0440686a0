// IPv4 and IPv6 addresses and networks (CIDR), and the ranges that egress
// refuses unless an operator names them: loopback, private, link-local,
// multicast, unspecified, documentation and reserved ones. Pure values, no I/O.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sandgate::sandboxing {

struct ip_address {
  std::array<std::uint8_t, 16> bytes{};  // an IPv4 address uses the first 4
  bool v4 = false;

  friend bool operator==(const ip_address&, const ip_address&) = default;
};

// "192.0.2.1", "2001:db8::1" (brackets are the caller's to strip); nothing
// for anything else (no octal, no short IPv4 forms, no zone ids).
[[nodiscard]] std::optional<ip_address> parse_ip(std::string_view text);
[[nodiscard]] std::string to_string(const ip_address& a);
// The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible
// (::a.b.c.d) or NAT64 (64:ff9b::a.b.c.d) IPv6 address; others unchanged.
[[nodiscard]] ip_address unmapped(const ip_address& a);

struct ip_network {
  ip_address base;  // host bits zero
  unsigned prefix = 0;

  [[nodiscard]] bool contains(const ip_address& a) const;
  [[nodiscard]] bool contains(const ip_network& n) const;
  friend bool operator==(const ip_network&, const ip_network&) = default;
};

// "198.51.100.0/24", "fc00::/7", or a bare address (a /32 or /128). Host
// bits must be zero. Nothing when malformed.
[[nodiscard]] std::optional<ip_network> parse_network(std::string_view text);
[[nodiscard]] std::string to_string(const ip_network& n);

// A range egress refuses unless a policy's cidrs name it (see docs/policy.md).
struct special_range {
  ip_network network;
  std::string_view name;  // "loopback", "private", "link-local", ...
};

// The refused range `a` (unmapped first) lies in, the most specific one, or
// nothing for a public address.
[[nodiscard]] std::optional<special_range> special_range_of(const ip_address& a);

}  // namespace sandgate::sandboxing
