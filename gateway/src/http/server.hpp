#pragma once
// The HTTP + WebSocket listener: accepts TCP connections (TCP_NODELAY,
// keep-alive) within the connection limits (connection_table), reads
// requests within explicit header, body, time and idle limits, hands REST
// requests to the router and makes a ws_session of each channels upgrade the
// router admits.

#include "connection_table.hpp"

#include <sandboxing/unique_fd.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace sandgate::gateway {

class memory_release;
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
  // The opening handshake's answer (and a close handshake) within this time.
  std::chrono::milliseconds handshake_timeout{10'000};
};

struct http_limits {
  std::size_t header_bytes = 16 * 1024;
  std::size_t body_bytes = 64 * 1024 * 1024;
  std::chrono::seconds idle{300};  // between requests, and for a body or an answer to go
  // A request head must be whole this long after the connection was accepted
  // (or its TLS handshake done), or after a later request's first byte.
  std::chrono::milliseconds header_timeout{20'000};
  std::chrono::milliseconds tls_handshake_timeout{10'000};
  ws_limits ws;  // of the WebSockets its connections become
};

class server {
 public:
  // `tls`: serve https/wss with this context; null for plain http.
  // `memory`: told once many connections have closed, so the heap they
  // used goes back to the system.
  server(boost::asio::io_context& io, const boost::asio::ip::tcp::endpoint& ep, router& r, http_limits limits,
         connection_table::limits connections, memory_release& memory,
         boost::asio::ssl::context* tls = nullptr);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  void run();   // starts accepting
  void stop();  // stops accepting; open connections end with their requests
  [[nodiscard]] unsigned short port() const;

 private:
  void do_accept();
  void on_accept(boost::system::error_code ec, boost::asio::ip::tcp::socket socket);
  void start_session(boost::asio::ip::tcp::socket socket, connection_table::slot place);
  // Closes a connection over a limit at once; on plain HTTP with a 503 first.
  void refuse(boost::asio::ip::tcp::socket& socket, connection_table::refusal why);
  // Out of descriptors: the spare one makes room to accept and close what
  // waits, so the loop does not spin on a connection it cannot take.
  void shed_backlog();
  void accept_later();
  // Logs a connection refused or displaced, at most once in a while.
  void note_pressure(const std::string& event, const boost::asio::ip::address& peer, std::uint64_t so_far);
  void on_count(std::size_t open, bool opened);

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  router& router_;
  http_limits limits_;
  memory_release& memory_;
  boost::asio::ssl::context* tls_;
  connection_table connections_;
  std::size_t closed_since_release_ = 0;
  sandboxing::unique_fd spare_;  // /dev/null, given up to accept when descriptors run out
  boost::asio::steady_timer retry_;
  bool out_of_descriptors_logged_ = false;
  std::chrono::steady_clock::time_point last_pressure_logged_{};
};

}  // namespace sandgate::gateway
