#pragma once
// The check on a sandbox's egress socket before the egress proxy accepts on
// it (see supervised_sandbox::copy_egress_listener): the descriptor copied
// from the supervisor must be what its ready event says, a TCP socket bound
// to 127.0.0.1:3128 in the sandbox's network namespace, never one in the
// gateway's own (which would serve the host's programs under a sandbox's
// policy).

#include <string>

namespace sandgate::gateway {

// Empty when `fd` is such a socket; else why not.
[[nodiscard]] std::string check_egress_socket(int fd);

}  // namespace sandgate::gateway
