#include "sandboxing/egress_rules.hpp"

#include <algorithm>

namespace sandgate::sandboxing {
namespace {

egress_decision refuse(std::string reason) {
  return {false, std::move(reason)};
}

// The most specific of the policy's cidrs holding `a`, or nullptr.
const ip_network* named_by(const network_policy& p, const ip_address& a) {
  const ip_network* best = nullptr;
  for (const auto& c : p.cidrs)
    if (c.contains(a) && (!best || c.prefix > best->prefix)) best = &c;
  return best;
}

}  // namespace

egress_decision check_address(const network_policy& p, const ip_address& address, bool literal,
                              const std::vector<ip_address>& host_own) {
  if (!egress_on(p)) return refuse("egress is off for this sandbox");
  const ip_address a = unmapped(address);
  const ip_network* cidr = named_by(p, a);
  if (const auto special = special_range_of(a)) {
    if (!cidr || cidr->prefix < special->network.prefix)
      return refuse(to_string(address) + " is a " + std::string(special->name) + " address");
  }
  const bool own =
      std::any_of(host_own.begin(), host_own.end(), [&](const ip_address& h) { return unmapped(h) == a; });
  if (own && (!cidr || cidr->prefix < (a.v4 ? 32u : 128u)))
    return refuse(to_string(address) + " is an address of the gateway's host");
  if (literal && p.mode == network_mode::allow && !cidr)
    return refuse("IP address " + to_string(address) + " is not in the sandbox's allowed cidrs");
  return {true, ""};
}

egress_decision check_target(const network_policy& p, std::string_view host, std::uint16_t port,
                             const std::vector<ip_address>& host_own) {
  if (!egress_on(p)) return refuse("egress is off for this sandbox");
  if (std::find(p.ports.begin(), p.ports.end(), port) == p.ports.end())
    return refuse("port " + std::to_string(port) + " is not an allowed port");
  if (host.empty()) return refuse("the request names no host");
  if (const auto literal = parse_ip(host)) return check_address(p, *literal, true, host_own);
  if (host.find_first_not_of("0123456789.") == std::string_view::npos)
    return refuse(std::string(host) + " is not a valid address");  // "127.1", "2130706433"
  if (!valid_host_pattern(host) || host.starts_with("*."))
    return refuse(std::string(host) + " is not a valid host name");
  if (p.mode == network_mode::allow &&
      std::none_of(p.hosts.begin(), p.hosts.end(),
                   [&](const std::string& h) { return host_matches(h, host); }))
    return refuse("host " + std::string(host) + " is not in the sandbox's allowed hosts");
  return {true, ""};
}

bool non_tls_allowed(const network_policy& p, std::uint16_t port) {
  return std::find(p.non_tls_ports.begin(), p.non_tls_ports.end(), port) != p.non_tls_ports.end();
}

}  // namespace sandgate::sandboxing
