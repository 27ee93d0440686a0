// The sandbox's network namespace: always its own, never with a route out;
// "loopback", "allow" and "open" bring lo up (egress reaches the proxy
// through the sandbox's 127.0.0.1:3128, on which the proxy outside accepts),
// "none" leaves even lo down.
#pragma once

#include "sandboxing/network_policy.hpp"

namespace sandgate::sandboxing {

// Applies the policy's network mode inside a fresh network namespace; throws sys_error.
void setup_network(network_mode mode);

}  // namespace sandgate::sandboxing
