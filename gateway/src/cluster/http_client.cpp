#include "http_client.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <memory>

namespace sandgate::gateway {
namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// One exchange. Every step holds the op; the deadline cancels whatever is
// pending (the resolver has no timeout of its own).
struct get_op : std::enable_shared_from_this<get_op> {
  get_op(asio::io_context& io, std::function<void(http_reply)> on_done)
      : resolver(io), stream(io), deadline(io), done(std::move(on_done)) {}

  tcp::resolver resolver;
  beast::tcp_stream stream;
  asio::steady_timer deadline;
  http::request<http::empty_body> req;
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  std::function<void(http_reply)> done;

  void finish(http_reply r) {
    if (!done) return;
    auto d = std::move(done);
    done = nullptr;
    deadline.cancel();
    resolver.cancel();
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream.close();
    d(std::move(r));
  }
  void fail(beast::error_code ec) { finish({ec, 0, {}}); }

  void start(const peer& to, std::chrono::milliseconds timeout) {
    deadline.expires_after(timeout);
    deadline.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->fail(asio::error::timed_out);
    });
    resolver.async_resolve(
        to.host, to.port,
        [self = shared_from_this()](beast::error_code ec, const tcp::resolver::results_type& r) {
          if (ec) return self->fail(ec);
          self->stream.async_connect(r, [self](beast::error_code e, const tcp::endpoint&) {
            if (e) return self->fail(e);
            self->write();
          });
        });
  }
  void write() {
    http::async_write(stream, req, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->fail(ec);
      http::async_read(self->stream, self->buffer, self->parser, [self](beast::error_code e, std::size_t) {
        if (e) return self->fail(e);
        auto& res = self->parser.get();
        self->finish({{}, res.result_int(), std::move(res.body())});
      });
    });
  }
};

}  // namespace

void http_get(asio::io_context& io, const peer& to, const std::string& target,
              const std::vector<std::pair<std::string, std::string>>& headers,
              std::chrono::milliseconds timeout, std::function<void(http_reply)> done,
              std::uint64_t max_body_bytes) {
  auto op = std::make_shared<get_op>(io, std::move(done));
  op->req.method(http::verb::get);
  op->req.target(to.base + target);
  op->req.version(11);
  op->req.set(http::field::host, to.host + ":" + to.port);
  op->req.set(http::field::user_agent, "sandgate");
  op->req.keep_alive(false);
  for (auto& [name, value] : headers)
    op->req.set(name, value);
  op->parser.body_limit(max_body_bytes);
  op->start(to, timeout);
}

}  // namespace sandgate::gateway
