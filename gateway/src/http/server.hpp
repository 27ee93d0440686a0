#pragma once
// The HTTP + WebSocket listener: accepts TCP connections (TCP_NODELAY,
// keep-alive), reads requests within explicit header, body and idle limits,
// hands REST requests to the router and channel upgrades to ws_session.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <functional>
#include <memory>

namespace sandgate::gateway {

class router;

struct http_limits {
  std::size_t header_bytes = 16 * 1024;
  std::size_t body_bytes = 64 * 1024 * 1024;
  std::chrono::seconds idle{300};
};

// Opens, binds and listens; throws std::runtime_error naming the address.
void listen_on(boost::asio::ip::tcp::acceptor& acceptor, const boost::asio::ip::tcp::endpoint& ep);

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
