// The decisions of the egress proxy, apart from its I/O: may a sandbox with
// this network policy reach this host and port, and this resolved address?
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sandboxing/ip_address.hpp"
#include "sandboxing/network_policy.hpp"

namespace sandgate::sandboxing {

struct egress_decision {
  bool allowed = false;
  std::string reason;  // why not, for the 403 body and the audit log ("" when allowed)
};

// The request's target before any lookup: the port must be listed; a name
// must match the hosts (mode allow) or be any name (mode open); an IP literal
// (brackets stripped) is checked as an address. `host` is normalized.
[[nodiscard]] egress_decision check_target(const network_policy& p, std::string_view host, std::uint16_t port,
                                           const std::vector<ip_address>& host_own);

// A resolved (or literal) address: refused when it lies in a special range
// (loopback, private, link-local, multicast, unspecified, ... and their IPv6
// and IPv4-mapped forms) or is one of the host's own addresses, unless one of
// the policy's cidrs holds it and is at least as specific as that range
// (127.0.0.1/32 names loopback; 0.0.0.0/0 names nothing). A literal in mode
// allow must be in the cidrs; `literal` says the client gave an address.
[[nodiscard]] egress_decision check_address(const network_policy& p, const ip_address& a, bool literal,
                                            const std::vector<ip_address>& host_own);

// True when a CONNECT tunnel on `port` may carry another protocol than TLS.
[[nodiscard]] bool non_tls_allowed(const network_policy& p, std::uint16_t port);

}  // namespace sandgate::sandboxing
