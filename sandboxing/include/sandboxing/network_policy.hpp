// A sandbox's network policy: no network, loopback only, or egress through
// the proxy (sandgate-egress) to an allow-list of hosts, networks and ports,
// or to anything public. The operator's policy also holds a ceiling: what a
// creator may ask for at most. Schema in docs/policy.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sandboxing/ip_address.hpp"
#include "sandboxing/policy_error.hpp"

namespace sandgate::sandboxing {

// Ordered: each mode allows everything the ones before it do.
enum class network_mode { none, loopback, allow, open };

struct network_policy {
  network_mode mode = network_mode::none;
  std::vector<std::string> hosts;  // allow: lower-case names, "*.example.com" matches below it
  std::vector<ip_network> cidrs;   // allow/open: IP literals and resolved addresses allowed
  std::vector<std::uint16_t> ports = {80, 443};
  // Ports (of `ports`) whose CONNECT tunnels may carry other protocols than
  // TLS; on every other port a tunnel must begin with a TLS ClientHello.
  std::vector<std::uint16_t> non_tls_ports;
  std::uint32_t max_connections = 64;            // open at once, per sandbox
  std::uint64_t bytes_per_second = 64ull << 20;  // both directions together, per sandbox

  friend bool operator==(const network_policy&, const network_policy&) = default;
};

// The port on the sandbox's 127.0.0.1 on which the egress proxy accepts.
inline constexpr std::uint16_t egress_proxy_port = 3128;
// What points programs at that port: HTTP_PROXY, HTTPS_PROXY, http_proxy,
// https_proxy = http://127.0.0.1:3128, NO_PROXY and no_proxy = localhost,127.0.0.1.
[[nodiscard]] std::map<std::string, std::string> egress_proxy_env();

// Parses a policy's network value: "none", "loopback", "allow", "open", or an
// object {"mode", "hosts", "cidrs", "ports", "non_tls_ports",
// "max_connections", "bytes_per_second"}. Throws policy_error naming `field` (e.g. "network.hosts[2]").
[[nodiscard]] network_policy parse_network_policy(const nlohmann::json& value, const std::string& field);
// A bare mode as a string, else the whole object.
[[nodiscard]] nlohmann::json to_json(const network_policy& p);
[[nodiscard]] std::string_view to_string(network_mode mode);
// True when the mode sends traffic out through the proxy.
[[nodiscard]] inline bool egress_on(const network_policy& p) noexcept {
  return p.mode == network_mode::allow || p.mode == network_mode::open;
}

// Why `wanted` asks for more than `ceiling` allows ("host evil.example.com is
// outside this gateway's network ceiling"), or nothing when it asks for no more.
[[nodiscard]] std::optional<std::string> exceeds(const network_policy& wanted, const network_policy& ceiling);

// Lower-cases a host name and drops one trailing dot.
[[nodiscard]] std::string normalize_host(std::string_view host);
// A name as DNS allows ("a-b.example", at most 253 bytes, labels 1-63), or "*." before one.
[[nodiscard]] bool valid_host_pattern(std::string_view pattern);
// "files.example.org" matches itself; "*.example.com" matches every name below
// example.com (not example.com itself). Both sides normalized.
[[nodiscard]] bool host_matches(std::string_view pattern, std::string_view host);

}  // namespace sandgate::sandboxing
