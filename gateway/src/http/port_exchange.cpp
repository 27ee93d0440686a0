#include "port_exchange.hpp"

#include "cookies.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace sandgate::gateway {
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;

namespace {

// The Cookie header without the cookie named `name`.
std::string without_cookie(std::string_view cookies, const std::string& name) {
  std::string out;
  for_each_cookie(cookies, [&](std::string_view n, std::string_view, std::string_view item) {
    if (n == name) return;
    if (!out.empty()) out += "; ";
    out += item;
  });
  return out;
}

bool expected(const error_code& ec) {
  return !ec || ec == http::error::need_buffer;
}

}  // namespace

template <class Stream>
port_exchange<Stream>::port_exchange(std::shared_ptr<void> owner, Stream& client,
                                     beast::flat_buffer& client_buffer,
                                     http::request_parser<http::empty_body>&& head,
                                     std::shared_ptr<port_upstream> upstream, port_rewrite rewrite,
                                     done_handler done)
    : owner_(std::move(owner)),
      client_(client),
      client_buffer_(client_buffer),
      request_(std::move(head)),
      upstream_(std::move(upstream)),
      rewrite_(std::move(rewrite)),
      done_(std::move(done)) {
  request_.body_limit(boost::none);  // streamed: never held
  response_.body_limit(boost::none);
  response_.header_limit(64 * 1024);
}

template <class Stream>
void port_exchange<Stream>::rewrite_head() {
  auto& req = request_.get();
  req.target(rewrite_.target);
  if (rewrite_.strip_authorization) req.erase(http::field::authorization);
  if (!rewrite_.strip_cookie.empty() && req.find(http::field::cookie) != req.end()) {
    const auto kept = without_cookie(req[http::field::cookie], rewrite_.strip_cookie);
    if (kept.empty()) {
      req.erase(http::field::cookie);
    } else {
      req.set(http::field::cookie, kept);
    }
  }
  const auto prior = req["X-Forwarded-For"];
  req.set("X-Forwarded-For",
          prior.empty() ? rewrite_.forwarded_for : std::string(prior) + ", " + rewrite_.forwarded_for);
  req.set("X-Forwarded-Proto", rewrite_.forwarded_proto);
  req.set("X-Forwarded-Host", req[http::field::host]);
  if (!rewrite_.forwarded_prefix.empty()) req.set("X-Forwarded-Prefix", rewrite_.forwarded_prefix);
  head_request_ = req.method() == http::verb::head;
}

template <class Stream>
void port_exchange<Stream>::run() {
  rewrite_head();
  request_out_.emplace(request_.get());
  write_request_head();
}

template <class Stream>
void port_exchange<Stream>::arm() {
  beast::get_lowest_layer(client_).expires_after(rewrite_.idle);
  upstream_->socket.expires_after(rewrite_.idle);
}

template <class Stream>
void port_exchange<Stream>::write_request_head() {
  arm();
  http::async_write_header(upstream_->socket, *request_out_,
                           [self = this->shared_from_this()](error_code ec, std::size_t) {
                             if (!expected(ec)) return self->finish(false, false);
                             if (self->request_.is_done()) return self->read_response_head();
                             self->request_body();
                           });
}

template <class Stream>
void port_exchange<Stream>::request_body() {
  // Beast's relay: read what the client sends into the buffer, then write it on.
  arm();
  auto& body = request_.get().body();
  body.data = up_.data();
  body.size = up_.size();
  http::async_read(
      client_, client_buffer_, request_, [self = this->shared_from_this()](error_code ec, std::size_t) {
        if (!expected(ec)) return self->finish(false, false);
        auto& b = self->request_.get().body();
        b.size = self->up_.size() - b.size;
        b.data = self->up_.data();
        b.more = !self->request_.is_done();
        http::async_write(self->upstream_->socket, *self->request_out_, [self](error_code wec, std::size_t) {
          if (!expected(wec)) return self->finish(false, false);
          if (self->request_out_->is_done()) return self->read_response_head();
          self->request_body();
        });
      });
}

template <class Stream>
void port_exchange<Stream>::read_response_head() {
  arm();
  if (head_request_) response_.skip(true);
  http::async_read_header(upstream_->socket, upstream_->buffer, response_,
                          [self = this->shared_from_this()](error_code ec, std::size_t) {
                            if (ec) return self->finish(false, false);
                            self->write_response_head();
                          });
}

template <class Stream>
void port_exchange<Stream>::write_response_head() {
  response_out_.emplace(response_.get());
  http::async_write_header(
      client_, *response_out_, [self = this->shared_from_this()](error_code ec, std::size_t) {
        if (!expected(ec)) return self->finish(false, false);
        if (self->response_.get().result() == http::status::switching_protocols) return self->tunnel();
        if (self->response_.is_done())
          return self->finish(self->request_.get().keep_alive() && self->response_.get().keep_alive(),
                              self->response_.get().keep_alive());
        self->response_body();
      });
}

template <class Stream>
void port_exchange<Stream>::response_body() {
  arm();
  auto& body = response_.get().body();
  body.data = down_.data();
  body.size = down_.size();
  http::async_read(
      upstream_->socket, upstream_->buffer, response_,
      [self = this->shared_from_this()](error_code ec, std::size_t) {
        if (!expected(ec) && ec != http::error::end_of_stream) return self->finish(false, false);
        auto& b = self->response_.get().body();
        b.size = self->down_.size() - b.size;
        b.data = self->down_.data();
        b.more = !self->response_.is_done();
        http::async_write(self->client_, *self->response_out_, [self](error_code wec, std::size_t) {
          if (!expected(wec)) return self->finish(false, false);
          if (self->response_out_->is_done())
            return self->finish(self->request_.get().keep_alive() && self->response_.get().keep_alive(),
                                self->response_.get().keep_alive());
          self->response_body();
        });
      });
}

template <class Stream>
void port_exchange<Stream>::finish(bool client_keeps, bool upstream_keeps) {
  if (!done_) return;
  auto done = std::move(done_);
  done_ = nullptr;
  done(client_keeps, upstream_keeps);
}

template <class Stream>
void port_exchange<Stream>::tunnel() {
  // What either side sent after its head goes first. A tunnel (a WebSocket) may be quiet for
  // long: it lasts until either side ends it.
  beast::get_lowest_layer(client_).expires_never();
  upstream_->socket.expires_never();
  auto self = this->shared_from_this();
  const auto early_up = beast::buffers_to_string(client_buffer_.data());
  client_buffer_.consume(client_buffer_.size());
  const auto early_down = beast::buffers_to_string(upstream_->buffer.data());
  upstream_->buffer.consume(upstream_->buffer.size());
  auto up = std::make_shared<std::string>(early_up);
  auto down = std::make_shared<std::string>(early_down);
  boost::asio::async_write(upstream_->socket, boost::asio::buffer(*up),
                           [self, up](error_code ec, std::size_t) {
                             if (ec) return self->tunnel_end();
                             self->tunnel_up();
                           });
  boost::asio::async_write(client_, boost::asio::buffer(*down), [self, down](error_code ec, std::size_t) {
    if (ec) return self->tunnel_end();
    self->tunnel_down();
  });
}

template <class Stream>
void port_exchange<Stream>::tunnel_up() {
  client_.async_read_some(
      boost::asio::buffer(up_), [self = this->shared_from_this()](error_code ec, std::size_t n) {
        if (ec) return self->tunnel_end();
        boost::asio::async_write(self->upstream_->socket, boost::asio::buffer(self->up_.data(), n),
                                 [self](error_code wec, std::size_t) {
                                   if (wec) return self->tunnel_end();
                                   self->tunnel_up();
                                 });
      });
}

template <class Stream>
void port_exchange<Stream>::tunnel_down() {
  upstream_->socket.async_read_some(
      boost::asio::buffer(down_), [self = this->shared_from_this()](error_code ec, std::size_t n) {
        if (ec) return self->tunnel_end();
        boost::asio::async_write(self->client_, boost::asio::buffer(self->down_.data(), n),
                                 [self](error_code wec, std::size_t) {
                                   if (wec) return self->tunnel_end();
                                   self->tunnel_down();
                                 });
      });
}

template <class Stream>
void port_exchange<Stream>::tunnel_end() {
  // Either side ending ends both: the other's pending operation fails and comes here too.
  if (!tunnel_ended_) {
    tunnel_ended_ = true;
    error_code ignored;
    upstream_->socket.close();
    beast::get_lowest_layer(client_).close();
  }
  if (--tunnel_halves_ == 0) finish(false, false);
}

template class port_exchange<plain_stream>;
template class port_exchange<tls_stream>;

}  // namespace sandgate::gateway
