#pragma once
// One HTTP connection over a plain or TLS stream: reads a request at a time
// with a size-limited parser, lets the router answer it (possibly
// asynchronously), writes the answer, and hands WebSocket upgrades to
// ws_session.

#include "server.hpp"
#include "streams.hpp"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <memory>
#include <optional>

namespace sandgate::gateway {

template <class Stream>
class http_session : public std::enable_shared_from_this<http_session<Stream>> {
 public:
  http_session(Stream&& stream, router& r, http_limits limits);
  void run();

 private:
  void do_read();
  void on_read(boost::beast::error_code ec, std::size_t bytes);
  void send(boost::beast::http::response<boost::beast::http::string_body>&& res);
  void on_write(bool keep_alive, boost::beast::error_code ec, std::size_t bytes);

  Stream stream_;
  boost::beast::flat_buffer buffer_;
  router& router_;
  http_limits limits_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::shared_ptr<boost::beast::http::response<boost::beast::http::string_body>> response_;
};

extern template class http_session<plain_stream>;
extern template class http_session<tls_stream>;

}  // namespace sandgate::gateway
