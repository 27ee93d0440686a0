// A sandbox's end of egress: a TCP socket on 127.0.0.1:3128 in the sandbox's
// network namespace, held by the supervisor (pid 1) for the sandbox's whole
// life. It is bound from the start, without SO_REUSEADDR, so that no program
// inside can take the port; it listens once egress is open. The egress proxy
// outside accepts on it (the gateway copies the descriptor out of the
// supervisor with pidfd_getfd and hands it over), so the socket a connection
// came in on names the sandbox, and nothing but a program's bytes cross from
// the sandbox to the proxy. While no gateway is connected (and so no proxy
// either) the supervisor answers each waiting connection itself with a 503
// naming why, then closes it: egress fails closed, never hangs.
#pragma once

#include <cstdint>

#include "sandboxing/unique_fd.hpp"

namespace sandgate::sandboxing::detail {

class egress_port {
 public:
  // Binds 127.0.0.1:`port` (lo may still be down); throws sys_error.
  explicit egress_port(std::uint16_t port);

  [[nodiscard]] int fd() const noexcept { return socket_.get(); }
  [[nodiscard]] bool listening() const noexcept { return listening_; }
  // Starts listening; nothing when it already does. Throws sys_error.
  void listen();
  // Accepts every connection waiting, answers it 503 and closes it.
  void refuse_waiting();

 private:
  unique_fd socket_;
  bool listening_ = false;
};

}  // namespace sandgate::sandboxing::detail
