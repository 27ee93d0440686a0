#include "http_session.hpp"

#include "../util/metrics.hpp"
#include "process_session.hpp"
#include "ws_session.hpp"

#include <gateway/log.hpp>

#include <boost/beast/websocket.hpp>

#include <unistd.h>

#include <type_traits>

namespace sandgate::gateway {
namespace beast = boost::beast;
namespace http = beast::http;

namespace {
// What the first read of a request asks for; the head's read grows it.
constexpr std::size_t first_read_bytes = 512;
}  // namespace

template <class Stream>
http_session<Stream>::http_session(Stream&& stream, router& r, http_limits limits,
                                   connection_table::slot place)
    : stream_(std::move(stream)), router_(r), limits_(limits), place_(std::move(place)) {}

template <class Stream>
void http_session<Stream>::run() {
  if constexpr (std::is_same_v<Stream, tls_stream>) {
    place_.waiting(*this);
    beast::get_lowest_layer(stream_).expires_after(limits_.tls_handshake_timeout);
    stream_.async_handshake(
        boost::asio::ssl::stream_base::server,
        [self = this->shared_from_this()](beast::error_code ec) { self->on_handshake(ec); });
  } else {
    wait_for_request(true);
  }
}

template <class Stream>
void http_session<Stream>::on_handshake(beast::error_code ec) {
  if (ec) {  // a failed handshake ends the connection
    if (ec == beast::error::timeout) ++gateway_metrics().connection_timeouts["tls_handshake"];
    return;
  }
  wait_for_request(true);
}

template <class Stream>
void http_session<Stream>::close_now() {
  beast::get_lowest_layer(stream_).close();  // what waits ends with operation_aborted
}

template <class Stream>
void http_session<Stream>::wait_for_request(bool fresh) {
  place_.waiting(*this);
  if (buffer_.size() != 0) return read_header(fresh);  // a pipelined request
  beast::get_lowest_layer(stream_).expires_after(fresh ? limits_.header_timeout : limits_.idle);
  stream_.async_read_some(buffer_.prepare(first_read_bytes),
                          [self = this->shared_from_this(), fresh](beast::error_code ec, std::size_t n) {
                            if (ec) {
                              if (ec == beast::error::timeout && fresh)
                                ++gateway_metrics().connection_timeouts["request_head"];
                              return (void)self->answer_read_error(ec);
                            }
                            self->buffer_.commit(n);
                            self->read_header(fresh);
                          });
}

template <class Stream>
void http_session<Stream>::read_header(bool fresh) {
  if (!fresh) beast::get_lowest_layer(stream_).expires_after(limits_.header_timeout);
  header_parser_ = std::make_unique<http::request_parser<http::empty_body>>();
  header_parser_->header_limit(static_cast<std::uint32_t>(limits_.header_bytes));
  header_parser_->body_limit(boost::none);  // set per request once the header tells what it is
  http::async_read_header(
      stream_, buffer_, *header_parser_,
      [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
}

template <class Stream>
bool http_session<Stream>::answer_read_error(beast::error_code ec) {
  if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == boost::asio::error::eof ||
      ec == boost::asio::error::operation_aborted || ec == boost::asio::error::connection_reset) {
    shutdown_send(stream_);
    return false;
  }
  if (ec == http::error::header_limit || ec == http::error::body_limit ||
      ec == http::error::buffer_overflow) {
    send(router::error_response(ec == http::error::body_limit ? http::status::payload_too_large
                                                              : http::status::request_header_fields_too_large,
                                ec.message(), 11, false));
    return true;
  }
  send(router::error_response(http::status::bad_request, "Malformed HTTP request: " + ec.message(), 11,
                              false));
  return true;
}

template <class Stream>
void http_session<Stream>::on_header(beast::error_code ec) {
  if (ec == beast::error::timeout) ++gateway_metrics().connection_timeouts["request_head"];
  if (ec) return (void)answer_read_error(ec);
  place_.busy();
  beast::get_lowest_layer(stream_).expires_after(limits_.idle);  // for the body, and the answer
  if (auto port = router_.port_target_of(header_parser_->get())) return proxy_port(*port);
  auto respond = [self = this->shared_from_this()](http::message_generator&& res) {
    self->send(std::move(res));
  };
  if (router_.is_upload(header_parser_->get())) {
    // The body waits in the connection until the upload's file is ready.
    return router_.begin_upload(
        header_parser_->get(), respond, [self = this->shared_from_this()](router::upload_start start) {
          if (start.rejection)
            return self->read_upload(nullptr, http::message_generator(std::move(*start.rejection)));
          self->read_upload(std::move(start.job));
        });
  }
  // A client without a valid token sends no body: it is answered now and the connection closes.
  if (header_parser_->chunked() || header_parser_->content_length().value_or(0) > 0)
    if (auto refusal = router_.refuse_before_body(header_parser_->get()))
      return send(http::message_generator(std::move(*refusal)));
  // The header parser took any length: a declared one over the limit is
  // refused here, a chunked body by the limit set below.
  if (const auto length = header_parser_->content_length(); length && *length > limits_.body_bytes)
    return (void)answer_read_error(http::error::body_limit);
  parser_ = std::make_unique<http::request_parser<http::string_body>>(std::move(*header_parser_));
  header_parser_.reset();
  parser_->body_limit(limits_.body_bytes);
  http::async_read(stream_, buffer_, *parser_,
                   [self = this->shared_from_this()](beast::error_code e, std::size_t) { self->on_read(e); });
}

// What is dropped after a refusal or a failed write before the connection
// is closed instead: past this, a client sending on gets no answer.
constexpr std::uint64_t max_dropped_upload_bytes = 64ull * 1024 * 1024;

template <class Stream>
// NOLINTNEXTLINE(performance-unnecessary-value-param): a sink, moved into upload_
void http_session<Stream>::read_upload(std::shared_ptr<router::upload_job> job,
                                       std::optional<http::message_generator> refusal) {
  upload_ = std::make_unique<upload_state>(std::move(*header_parser_));
  header_parser_.reset();
  upload_->parser.body_limit(boost::none);  // counted here: past the limit the rest is dropped
  upload_->job = std::move(job);
  upload_->refusal = std::move(refusal);
  if (upload_->parser.is_done()) return end_upload({});
  read_upload_some();
}

template <class Stream>
void http_session<Stream>::read_upload_some() {
  auto& body = upload_->parser.get().body();
  body.data = upload_->buffer.data();
  body.size = upload_->buffer.size();
  beast::get_lowest_layer(stream_).expires_after(limits_.idle);
  http::async_read_some(stream_, buffer_, upload_->parser,
                        [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                          auto& up = *self->upload_;
                          if (ec == http::error::need_buffer) ec = {};
                          const std::size_t n = up.buffer.size() - up.parser.get().body().size;
                          if (ec) return self->end_upload(ec);
                          const bool keep = up.job && !up.refusal && up.write_error == 0 &&
                                            up.written + n <= up.job->max_bytes;
                          if (keep) {
                            for (std::size_t done = 0; done < n;) {
                              const auto w = ::write(up.job->file(), up.buffer.data() + done, n - done);
                              if (w < 0 && errno == EINTR) continue;
                              if (w < 0) {
                                up.write_error = errno;
                                break;
                              }
                              done += static_cast<std::size_t>(w);
                            }
                            up.written += n;
                          } else {
                            if (up.job && up.write_error == 0 && !up.refusal) up.write_error = EFBIG;
                            up.dropped += n;
                          }
                          if (up.parser.is_done()) return self->end_upload({});
                          if (up.dropped > max_dropped_upload_bytes)
                            return self->end_upload(http::error::body_limit);
                          self->read_upload_some();
                        });
}

template <class Stream>
void http_session<Stream>::end_upload(beast::error_code ec) {
  auto up = std::move(upload_);
  if (ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset ||
      ec == beast::error::timeout || ec == http::error::partial_message) {
    router_.abort_upload(up->job);  // nobody to answer
    return shutdown_send(stream_);
  }
  if (up->refusal) return send(std::move(*up->refusal));
  if (!ec && up->write_error) ec = beast::error_code(up->write_error, boost::system::generic_category());
  router_.finish_upload(up->job, ec);
}

template <class Stream>
void http_session<Stream>::on_read(beast::error_code ec) {
  if (ec) return (void)answer_read_error(ec);
  auto req = parser_->release();
  parser_.reset();
  if (beast::websocket::is_upgrade(req) && router_.is_process_attach(req)) {
    // The supervisor is asked for an attachment first; the stream waits here meanwhile.
    auto self = this->shared_from_this();
    auto shared_req = std::make_shared<router::request>(std::move(req));
    router_.admit_process(
        *shared_req, [self, shared_req](std::variant<router::process_grant, router::response> admitted) {
          if (auto* rejection = std::get_if<router::response>(&admitted))
            return self->send(http::message_generator(std::move(*rejection)));
          auto& grant = std::get<router::process_grant>(admitted);
          std::make_shared<process_session<Stream>>(std::move(self->stream_), std::move(grant.sandbox),
                                                    std::move(grant.process_id), std::move(grant.attachment),
                                                    self->limits_.ws, std::move(self->place_))
              ->run(std::move(*shared_req));
        });
    return;
  }
  if (beast::websocket::is_upgrade(req)) {
    auto admitted = router_.admit_channels(req);
    if (auto* rejection = std::get_if<router::response>(&admitted))
      return send(http::message_generator(std::move(*rejection)));
    auto& grant = std::get<router::channels_grant>(admitted);
    std::make_shared<ws_session<Stream>>(std::move(stream_), std::move(grant.target),
                                         std::move(grant.session_id), std::move(grant.principal), grant.v1,
                                         limits_.ws, *grant.memory, std::move(place_))
        ->run(std::move(req));
    return;  // the stream now belongs to the WebSocket session
  }
  router_.handle(std::move(req), [self = this->shared_from_this()](http::message_generator&& res) {
    self->send(std::move(res));
  });
}

template <class Stream>
void http_session<Stream>::proxy_port(const router::port_target& target) {
  const bool body = header_parser_->chunked() || header_parser_->content_length().value_or(0) > 0;
  auto admitted = router_.admit_port(header_parser_->get(), target, std::is_same_v<Stream, tls_stream>);
  if (auto* answer = std::get_if<router::response>(&admitted)) {
    if (body) answer->keep_alive(false);  // its body is not read
    header_parser_.reset();
    return send(http::message_generator(std::move(*answer)));
  }
  auto grant = std::get<router::port_grant>(std::move(admitted));
  grant.rewrite.idle = limits_.idle;
  beast::error_code ec;
  grant.rewrite.forwarded_for =
      beast::get_lowest_layer(stream_).socket().remote_endpoint(ec).address().to_string();
  if (upstream_ && upstream_->sandbox_id == grant.sandbox->id && upstream_->port == grant.port &&
      upstream_->socket.socket().is_open())
    return relay_port(std::move(grant), std::exchange(upstream_, nullptr));
  upstream_.reset();
  auto fail = [this, body, version = header_parser_->get().version()](http::status status, std::string reason,
                                                                      std::string message) {
    auto res =
        router::error_response_with_reason(status, std::move(reason), std::move(message), version, !body);
    header_parser_.reset();
    send(http::message_generator(std::move(res)));
  };
  std::string error;
  auto fd = grant.sandbox->box->port_socket(error);
  if (!fd)
    return fail(http::status::conflict, "sandbox_unreachable", "The sandbox cannot be reached: " + error);
  boost::asio::ip::tcp::socket socket(stream_.get_executor());
  socket.assign(boost::asio::ip::tcp::v4(), fd.release(), ec);
  if (ec)
    return fail(http::status::internal_server_error, "internal", "Cannot use the socket: " + ec.message());
  auto up = std::make_shared<port_upstream>(std::move(socket));
  up->sandbox_id = grant.sandbox->id;
  up->port = grant.port;
  up->socket.expires_after(std::chrono::seconds(10));
  const boost::asio::ip::tcp::endpoint where(boost::asio::ip::make_address_v4("127.0.0.1"), grant.port);
  up->socket.async_connect(
      where, [self = this->shared_from_this(), up, grant, fail](beast::error_code cec) mutable {
        if (cec) {
          self->router_.note_port_connection(
              grant, cec == boost::asio::error::connection_refused ? "refused" : "failed",
              grant.rewrite.forwarded_for);
          return fail(http::status::bad_gateway, "port_not_listening",
                      "Nothing listens on port " + std::to_string(grant.port) + " in sandbox " +
                          grant.sandbox->id + " (" + cec.message() + ")");
        }
        self->router_.note_port_connection(grant, "connected", grant.rewrite.forwarded_for);
        beast::error_code ignored;
        up->socket.socket().set_option(boost::asio::ip::tcp::no_delay(true), ignored);
        self->relay_port(std::move(grant), up);
      });
}

template <class Stream>
void http_session<Stream>::relay_port(router::port_grant grant, std::shared_ptr<port_upstream> upstream) {
  ++gateway_metrics().port_requests;
  auto self = this->shared_from_this();
  auto exchange = std::make_shared<port_exchange<Stream>>(
      self, stream_, buffer_, std::move(*header_parser_), upstream, std::move(grant.rewrite),
      [self, upstream](bool client_keeps, bool upstream_keeps) {
        if (upstream_keeps) self->upstream_ = upstream;
        if (!client_keeps) return shutdown_send(self->stream_);
        self->wait_for_request(false);
      });
  header_parser_.reset();
  exchange->run();
}

template <class Stream>
void http_session<Stream>::send(http::message_generator&& res) {
  const bool keep_alive = res.keep_alive();
  beast::get_lowest_layer(stream_).expires_after(limits_.idle);
  beast::async_write(stream_, std::move(res),
                     [self = this->shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
                       self->on_write(keep_alive, ec);
                     });
}

template <class Stream>
void http_session<Stream>::on_write(bool keep_alive, beast::error_code ec) {
  if (ec) return;
  if (!keep_alive) return shutdown_send(stream_);
  wait_for_request(false);
}

template class http_session<plain_stream>;
template class http_session<tls_stream>;

}  // namespace sandgate::gateway
