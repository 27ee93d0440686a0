#pragma once
// The HTTP + WebSocket listener: accepts TCP connections (TCP_NODELAY,
// keep-alive), reads requests within explicit header, body and idle limits,
// hands REST requests to the router and makes a ws_session of each channels
// upgrade the router admits.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>

namespace sandgate::gateway {

class router;

struct ws_limits {
  std::size_t message_bytes = 64 * 1024 * 1024;  // largest client message
  std::size_t queue_bytes = 256 * 1024 * 1024;   // output waiting for one client
  // Past this much queued output the client holds the kernel's output back
  // (kernel::hold_output), until its queue is down to a quarter of it.
  std::size_t hold_bytes = 4 * 1024 * 1024;
  // A client past hold_bytes that takes in nothing for this long is closed
  // (whether or not its kernel can be held).
  std::chrono::milliseconds stall_timeout{10'000};
  // Frames that find others waiting go out together, up to this many bytes
  // in one write (copied once); a larger frame is written on its own.
  std::size_t batch_bytes = 64 * 1024;
  // A close whose last write does not go out in this time drops the connection.
  std::chrono::milliseconds close_timeout{5'000};
};

struct http_limits {
  std::size_t header_bytes = 16 * 1024;
  std::size_t body_bytes = 64 * 1024 * 1024;
  std::chrono::seconds idle{300};
  ws_limits ws;  // of the WebSockets its connections become
};

class server {
 public:
  // `tls`: serve https/wss with this context; null for plain http.
  server(boost::asio::io_context& io, const boost::asio::ip::tcp::endpoint& ep, router& r, http_limits limits,
         boost::asio::ssl::context* tls = nullptr);

  void run();   // starts accepting
  void stop();  // stops accepting; open connections end with their requests
  [[nodiscard]] unsigned short port() const;

 private:
  void do_accept();

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  router& router_;
  http_limits limits_;
  boost::asio::ssl::context* tls_;
};

}  // namespace sandgate::gateway
