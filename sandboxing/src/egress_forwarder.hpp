// The forwarder inside a sandbox with egress: the supervisor (in the
// sandbox's network namespace) listens on 127.0.0.1:3128 and relays every
// accepted connection, byte for byte, to the egress proxy's unix socket in
// the run dir (/run/sandgate/egress.sock), with splice(2) through a pipe per
// direction (64 KiB each, no copies through user space). It knows nothing of
// HTTP; the proxy outside decides. When the proxy cannot be reached the
// client gets a 503 naming why, then the connection closes (never a hang).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sandboxing/unique_fd.hpp"

namespace sandgate::sandboxing::detail {

inline constexpr std::size_t max_forwarded_connections = 256;

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
    int from = -1;
    int to = -1;
    unique_fd pipe_read;
    unique_fd pipe_write;
    std::size_t in_pipe = 0;
    bool eof = false;   // `from` ended
    bool shut = false;  // `to` was shut down for writing
    bool dead = false;  // broken: nothing more moves this way
    [[nodiscard]] bool done() const noexcept { return shut || dead; }
  };
  struct pair {
    unique_fd client;
    unique_fd proxy;
    direction up;    // client -> proxy
    direction down;  // proxy -> client
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
