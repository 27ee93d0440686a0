#include "http_session.hpp"

#include "../api/router.hpp"

#include <gateway/log.hpp>

#include <boost/beast/websocket.hpp>

namespace sandgate::gateway {
namespace beast = boost::beast;
namespace http = beast::http;

template <class Stream>
http_session<Stream>::http_session(Stream&& stream, router& r, http_limits limits)
    : stream_(std::move(stream)), router_(r), limits_(limits) {}

template <class Stream>
void http_session<Stream>::run() {
  do_read();
}

template <class Stream>
void http_session<Stream>::do_read() {
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(limits_.header_bytes));
  parser_->body_limit(limits_.body_bytes);
  beast::get_lowest_layer(stream_).expires_after(limits_.idle);
  http::async_read(
      stream_, buffer_, *parser_,
      [self = this->shared_from_this()](beast::error_code ec, std::size_t n) { self->on_read(ec, n); });
}

template <class Stream>
void http_session<Stream>::on_read(beast::error_code ec, std::size_t) {
  if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == boost::asio::error::eof)
    return shutdown_send(stream_);
  if (ec == http::error::header_limit || ec == http::error::body_limit ||
      ec == http::error::buffer_overflow) {
    auto res =
        router::error_response(ec == http::error::body_limit ? http::status::payload_too_large
                                                             : http::status::request_header_fields_too_large,
                               ec.message(), 11, false);
    return send(std::move(res));
  }
  if (ec) {
    if (ec == boost::asio::error::operation_aborted || ec == boost::asio::error::connection_reset) return;
    return send(router::error_response(http::status::bad_request, "Malformed HTTP request: " + ec.message(),
                                       11, false));
  }
  auto req = parser_->release();
  if (beast::websocket::is_upgrade(req)) {
    if (auto rejection = router_.upgrade(req, stream_)) return send(std::move(*rejection));
    return;  // the stream now belongs to a WebSocket session
  }
  router_.handle(std::move(req), [self = this->shared_from_this()](http::response<http::string_body>&& res) {
    self->send(std::move(res));
  });
}

template <class Stream>
void http_session<Stream>::send(http::response<http::string_body>&& res) {
  response_ = std::make_shared<http::response<http::string_body>>(std::move(res));
  response_->prepare_payload();
  const bool keep_alive = response_->keep_alive();
  beast::get_lowest_layer(stream_).expires_after(limits_.idle);
  http::async_write(stream_, *response_,
                    [self = this->shared_from_this(), keep_alive](beast::error_code ec, std::size_t n) {
                      self->on_write(keep_alive, ec, n);
                    });
}

template <class Stream>
void http_session<Stream>::on_write(bool keep_alive, beast::error_code ec, std::size_t) {
  response_.reset();
  if (ec) return;
  if (!keep_alive) return shutdown_send(stream_);
  do_read();
}

template class http_session<plain_stream>;
template class http_session<tls_stream>;

}  // namespace sandgate::gateway
