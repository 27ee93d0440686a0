#include "sandboxing/ip_address.hpp"

#include <arpa/inet.h>

#include <charconv>
#include <vector>

namespace sandgate::sandboxing {
namespace {

bool bit(const ip_address& a, unsigned i) {
  return (a.bytes[i / 8] >> (7 - i % 8)) & 1;
}

ip_address v4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
  ip_address out;
  out.v4 = true;
  out.bytes[0] = a;
  out.bytes[1] = b;
  out.bytes[2] = c;
  out.bytes[3] = d;
  return out;
}

ip_network net(const char* text) {
  return *parse_network(text);
}

const std::vector<special_range>& special_ranges() {
  static const std::vector<special_range> ranges = {
      {net("0.0.0.0/8"), "unspecified"},
      {net("10.0.0.0/8"), "private"},
      {net("100.64.0.0/10"), "shared (CGNAT)"},
      {net("127.0.0.0/8"), "loopback"},
      {net("169.254.0.0/16"), "link-local"},
      {net("172.16.0.0/12"), "private"},
      {net("192.0.0.0/24"), "IETF protocol"},
      {net("192.0.2.0/24"), "documentation"},
      {net("192.88.99.0/24"), "6to4 relay"},
      {net("192.168.0.0/16"), "private"},
      {net("198.18.0.0/15"), "benchmarking"},
      {net("198.51.100.0/24"), "documentation"},
      {net("203.0.113.0/24"), "documentation"},
      {net("224.0.0.0/4"), "multicast"},
      {net("240.0.0.0/4"), "reserved"},
      {net("255.255.255.255/32"), "broadcast"},
      {net("::/128"), "unspecified"},
      {net("::1/128"), "loopback"},
      {net("::/96"), "IPv4-compatible"},
      {net("100::/64"), "discard"},
      {net("2001::/23"), "IETF protocol"},
      {net("2001:db8::/32"), "documentation"},
      {net("3fff::/20"), "documentation"},
      {net("64:ff9b:1::/48"), "local-use NAT64"},
      {net("2002::/16"), "6to4"},
      {net("fc00::/7"), "unique local (private)"},
      {net("fe80::/10"), "link-local"},
      {net("fec0::/10"), "site-local"},
      {net("ff00::/8"), "multicast"},
  };
  return ranges;
}

}  // namespace

std::optional<ip_address> parse_ip(std::string_view text) {
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  const std::string s(text);
  ip_address out;
  if (s.find(':') == std::string::npos) {
    if (::inet_pton(AF_INET, s.c_str(), out.bytes.data()) != 1) return std::nullopt;
    out.v4 = true;
    return out;
  }
  if (::inet_pton(AF_INET6, s.c_str(), out.bytes.data()) != 1) return std::nullopt;
  return out;
}

std::string to_string(const ip_address& a) {
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(a.v4 ? AF_INET : AF_INET6, a.bytes.data(), text, sizeof text);
  return text;
}

ip_address unmapped(const ip_address& a) {
  if (a.v4) return a;
  const auto& b = a.bytes;
  auto zero = [&](unsigned from, unsigned to) {
    for (unsigned i = from; i < to; ++i)
      if (b[i] != 0) return false;
    return true;
  };
  const bool mapped = zero(0, 10) && b[10] == 0xff && b[11] == 0xff;
  const bool compatible = zero(0, 12) && !(b[12] == 0 && b[13] == 0 && b[14] == 0 && b[15] <= 1);
  const bool nat64 = b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zero(4, 12);
  if (mapped || compatible || nat64) return v4(b[12], b[13], b[14], b[15]);
  return a;
}

bool ip_network::contains(const ip_address& a) const {
  if (a.v4 != base.v4) return false;
  for (unsigned i = 0; i < prefix; ++i)
    if (bit(a, i) != bit(base, i)) return false;
  return true;
}

bool ip_network::contains(const ip_network& n) const {
  return n.prefix >= prefix && contains(n.base);
}

std::optional<ip_network> parse_network(std::string_view text) {
  const auto slash = text.find('/');
  auto address = parse_ip(text.substr(0, slash));
  if (!address) return std::nullopt;
  const unsigned width = address->v4 ? 32 : 128;
  unsigned prefix = width;
  if (slash != std::string_view::npos) {
    const auto digits = text.substr(slash + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), prefix);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || prefix > width)
      return std::nullopt;
  }
  for (unsigned i = prefix; i < width; ++i)
    if (bit(*address, i)) return std::nullopt;  // host bits set: probably a typo
  return ip_network{*address, prefix};
}

std::string to_string(const ip_network& n) {
  return to_string(n.base) + "/" + std::to_string(n.prefix);
}

std::optional<special_range> special_range_of(const ip_address& address) {
  const ip_address a = unmapped(address);
  std::optional<special_range> best;
  for (const auto& r : special_ranges())
    if (r.network.contains(a) && (!best || r.network.prefix > best->network.prefix)) best = r;
  return best;
}

}  // namespace sandgate::sandboxing
