#pragma once
// One request to a port of a sandbox, relayed by the HTTP session whose
// connection it came on: the client's request (its head rewritten as the
// router granted, its body streamed, never held whole) goes to the program
// listening on 127.0.0.1:<port> in the sandbox, and its answer (streamed
// too) back. A 101 answer (a WebSocket, any upgrade) turns the connection
// into a tunnel between the two until either side ends. Each way is read
// only as fast as the other takes it.

#include "../api/router.hpp"
#include "streams.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace sandgate::gateway {

// A connection to a port in a sandbox, kept by the client's session for its
// next requests to the same port.
struct port_upstream {
  explicit port_upstream(boost::asio::ip::tcp::socket s) : socket(std::move(s)) {}
  boost::beast::tcp_stream socket;
  boost::beast::flat_buffer buffer;
  std::string sandbox_id;
  std::uint16_t port = 0;
};

template <class Stream>
class port_exchange final : public std::enable_shared_from_this<port_exchange<Stream>> {
 public:
  // `client_keeps`: the client's connection may carry another request;
  // `upstream_keeps`: so may the upstream's. After a tunnel both are false.
  using done_handler = std::function<void(bool client_keeps, bool upstream_keeps)>;

  // `owner` (the session) lives as long as the exchange; `client` and
  // `client_buffer` are its.
  port_exchange(std::shared_ptr<void> owner, Stream& client, boost::beast::flat_buffer& client_buffer,
                boost::beast::http::request_parser<boost::beast::http::empty_body>&& head,
                std::shared_ptr<port_upstream> upstream, port_rewrite rewrite, done_handler done);

  void run();

 private:
  using request_parser = boost::beast::http::request_parser<boost::beast::http::buffer_body>;
  using response_parser = boost::beast::http::response_parser<boost::beast::http::buffer_body>;

  void rewrite_head();
  void arm();  // both sides' deadlines: the idle time from now
  // request: client -> upstream
  void write_request_head();
  void request_body();
  // response: upstream -> client
  void read_response_head();
  void write_response_head();
  void response_body();
  void finish(bool client_keeps, bool upstream_keeps);
  // upgrade: bytes both ways until either side ends
  void tunnel();
  void tunnel_up();
  void tunnel_down();
  void tunnel_end();

  std::shared_ptr<void> owner_;
  Stream& client_;
  boost::beast::flat_buffer& client_buffer_;
  request_parser request_;
  std::optional<boost::beast::http::request_serializer<boost::beast::http::buffer_body>> request_out_;
  response_parser response_;
  std::optional<boost::beast::http::response_serializer<boost::beast::http::buffer_body>> response_out_;
  std::shared_ptr<port_upstream> upstream_;
  port_rewrite rewrite_;
  done_handler done_;
  std::array<char, 64 * 1024> up_{};
  std::array<char, 64 * 1024> down_{};
  bool head_request_ = false;
  bool tunnel_ended_ = false;
  int tunnel_halves_ = 2;
};

extern template class port_exchange<plain_stream>;
extern template class port_exchange<tls_stream>;

}  // namespace sandgate::gateway
