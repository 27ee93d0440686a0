#pragma once
// One client's conversation with one kernel, whatever carries it: a
// gateway's channels WebSocket or the kernel's own ZeroMQ sockets.

#include <jupyter_protocol/message.hpp>
#include <jupyter_protocol/websocket.hpp>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

namespace sandgate::bench {

struct received {
  protocol::channel channel{};
  protocol::message message;
};

struct bench_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class kernel_connection {
 public:
  explicit kernel_connection(std::string session) : session_(std::move(session)) {}
  virtual ~kernel_connection() = default;
  kernel_connection(const kernel_connection&) = delete;
  kernel_connection& operator=(const kernel_connection&) = delete;

  // Sends a message built by the client (header and content set).
  virtual void send(protocol::channel ch, const protocol::message& msg) = 0;
  // The next message from the kernel, or nothing once `timeout` passed.
  // Throws bench_error when the connection ended or broke.
  virtual std::optional<received> receive(std::chrono::milliseconds timeout) = 0;

  // The client session id put in every header this connection sends.
  [[nodiscard]] const std::string& session() const noexcept { return session_; }

 private:
  std::string session_;
};

}  // namespace sandgate::bench
