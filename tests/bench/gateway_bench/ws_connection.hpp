#pragma once
// A kernel's channels WebSocket (/api/kernels/{id}/channels) spoken with
// the legacy JSON protocol or v1.kernel.websocket.jupyter.org, with
// synchronous Beast calls: no executor hops between the socket and the
// measurement. A receive timeout breaks the stream (Beast cannot resume a
// half-read frame), so later calls throw.

#include "kernel_connection.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket/stream.hpp>

namespace sandgate::bench {

struct ws_endpoint {
  std::string host = "127.0.0.1";
  std::string port;
  std::string target;  // path and query
  std::string token;   // sent as "Authorization: token ..." when not empty
  bool v1 = true;
  std::chrono::milliseconds handshake_timeout{std::chrono::minutes(5)};  // a server that never answers
};

class ws_connection final : public kernel_connection {
 public:
  ws_connection(const ws_endpoint& ep, std::string session);
  ~ws_connection() override;

  void send(protocol::channel ch, const protocol::message& msg) override;
  std::optional<received> receive(std::chrono::milliseconds timeout) override;

 private:
  void set_timeout(std::chrono::milliseconds timeout);
  [[nodiscard]] received decode(std::string_view data, bool binary) const;

  boost::asio::io_context io_;
  boost::beast::websocket::stream<boost::asio::ip::tcp::socket> ws_;
  boost::beast::flat_buffer buffer_;
  bool v1_;
  bool broken_ = false;
  std::chrono::milliseconds timeout_{-1};
};

}  // namespace sandgate::bench
