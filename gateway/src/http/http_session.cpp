#include "http_session.hpp"

#include "../api/router.hpp"

#include <gateway/log.hpp>

#include <boost/beast/websocket.hpp>

namespace sandgate::gateway {
namespace beast = boost::beast;
namespace http = beast::http;

http_session::http_session(boost::asio::ip::tcp::socket&& socket, router& r, http_limits limits)
    : stream_(std::move(socket)), router_(r), limits_(limits) {}

void http_session::run() {
  do_read();
}

void http_session::do_read() {
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(limits_.header_bytes));
  parser_->body_limit(limits_.body_bytes);
  stream_.expires_after(limits_.idle);
  http::async_read(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, std::size_t n) { self->on_read(ec, n); });
}

void http_session::on_read(beast::error_code ec, std::size_t) {
  if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == boost::asio::error::eof) {
    beast::error_code ignored;
    stream_.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
    return;
  }
  if (ec == http::error::header_limit || ec == http::error::body_limit ||
      ec == http::error::buffer_overflow) {
    auto res =
        router::error_response(ec == http::error::body_limit ? http::status::payload_too_large
                                                             : http::status::request_header_fields_too_large,
                               ec.message(), 11, false);
    res.keep_alive(false);
    return send(std::move(res));
  }
  if (ec) {
    if (ec != boost::asio::error::operation_aborted && ec != boost::asio::error::connection_reset)
      return send([&] {
        auto res = router::error_response(http::status::bad_request,
                                          "Malformed HTTP request: " + ec.message(), 11, false);
        res.keep_alive(false);
        return res;
      }());
    return;
  }
  auto req = parser_->release();
  if (beast::websocket::is_upgrade(req)) {
    if (auto rejection = router_.upgrade(req, stream_)) return send(std::move(*rejection));
    return;  // the stream now belongs to a WebSocket session
  }
  router_.handle(std::move(req), [self = shared_from_this()](http::response<http::string_body>&& res) {
    self->send(std::move(res));
  });
}

void http_session::send(http::response<http::string_body>&& res) {
  response_ = std::make_shared<http::response<http::string_body>>(std::move(res));
  response_->prepare_payload();
  const bool keep_alive = response_->keep_alive();
  stream_.expires_after(limits_.idle);
  http::async_write(stream_, *response_,
                    [self = shared_from_this(), keep_alive](beast::error_code ec, std::size_t n) {
                      self->on_write(keep_alive, ec, n);
                    });
}

void http_session::on_write(bool keep_alive, beast::error_code ec, std::size_t) {
  response_.reset();
  if (ec) return;
  if (!keep_alive) {
    beast::error_code ignored;
    stream_.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
    return;
  }
  do_read();
}

}  // namespace sandgate::gateway
