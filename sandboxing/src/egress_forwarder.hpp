// The forwarder inside a sandbox with egress: the supervisor (in the
// sandbox's network namespace) listens on 127.0.0.1:3128 and relays every
// accepted connection, byte for byte, to the egress proxy's unix socket in
// the run dir (/run/sandgate/egress.sock), with splice(2) through a pipe per
// direction (egress::splice_pump: no copies through user space). It knows
// nothing of HTTP; the proxy outside decides. When the proxy cannot be
// reached the client gets a 503 naming why, then the connection closes
// (never a hang).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "egress/splice_pump.hpp"
#include "sandboxing/unique_fd.hpp"

namespace sandgate::sandboxing::detail {

inline constexpr std::size_t max_forwarded_connections = 256;
// Each direction's pipe (the system's default, 64 KiB, when the sandbox
// user's pipe pages run out), and the send buffer of both sockets of a
// connection (net.core.wmem_max permitting; the kernel doubles it): at most
// about 2 x 1 MiB + 2 x 2 MiB held per connection, in the kernel.
inline constexpr std::size_t forwarder_pipe_bytes = 1024 * 1024;
inline constexpr int forwarder_socket_buffer_bytes = 1024 * 1024;

class egress_forwarder {
 public:
  // A TCP socket bound to 127.0.0.1:`port`, not listening (connects to it
  // are refused) and without SO_REUSEADDR, so that no program in the sandbox
  // can bind that port before the forwarder needs it; throws sys_error.
  [[nodiscard]] static unique_fd reserve(std::uint16_t port);
  // Listens on `bound` (from reserve()); throws sys_error.
  egress_forwarder(unique_fd bound, std::string proxy_socket);
  ~egress_forwarder();

  // An epoll descriptor the supervisor watches for EPOLLIN.
  [[nodiscard]] int fd() const noexcept { return epoll_.get(); }
  // Handles whatever is ready (accepts, relays, closes).
  void on_ready();

 private:
  struct direction {
    explicit direction(std::size_t pipe_bytes) : pump(pipe_bytes) {}
    int from = -1;
    int to = -1;
    egress::splice_pump pump;
    bool done = false;  // `to` shut down for writing, or broken: nothing more moves this way
  };
  struct pair {
    unique_fd client;
    unique_fd proxy;
    direction up{forwarder_pipe_bytes};    // client -> proxy
    direction down{forwarder_pipe_bytes};  // proxy -> client
    bool closed = false;
  };

  void accept_all();
  // Moves what it can both ways; false when both ways are finished or broken.
  // A way that breaks (its reader gone) does not stop the other: a reply the
  // proxy wrote before closing still reaches the client.
  bool pump(pair& p);
  static void pump(direction& d);

  std::string proxy_socket_;
  unique_fd epoll_;
  unique_fd listener_;
  std::map<pair*, std::unique_ptr<pair>> pairs_;
};

}  // namespace sandgate::sandboxing::detail
