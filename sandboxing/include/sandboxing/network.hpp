// The sandbox's network namespace: always its own; "loopback" brings lo up,
// "none" leaves even lo down.
#pragma once

#include "sandboxing/policy.hpp"

namespace sandgate::sandboxing {

// Applies the policy's network mode inside a fresh network namespace; throws sys_error.
void setup_network(network_mode mode);

}  // namespace sandgate::sandboxing
