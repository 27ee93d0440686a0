#pragma once
// A TCP socket made in a sandbox's network namespace, for the gateway to
// connect to a port a program in the sandbox listens on (127.0.0.1 there).
// The calling thread enters the namespace for the two calls that make the
// socket and leaves it at once: a socket stays in the namespace it was made
// in, wherever it is used from. No route, interface or listener is added;
// the sandbox's loopback is brought up if it is down (a sandbox started with
// network "none"), which gives it no way out: its namespace has no other
// interface.

#include <sandboxing/unique_fd.hpp>

#include <sys/types.h>

#include <string>

namespace sandgate::gateway {

// `supervisor`: a pidfd of the sandbox's pid 1 (its network namespace is the
// sandbox's), opened when it was known to be the sandbox's: a pid could be
// reused by another process, a pidfd names one process or fails. A
// non-blocking, close-on-exec IPv4 stream socket, or an invalid one with
// `error` set.
[[nodiscard]] sandboxing::unique_fd socket_in_sandbox(int supervisor, std::string& error);

}  // namespace sandgate::gateway
