#include "server.hpp"

#include "../util/listen.hpp"
#include "http_session.hpp"

#include <gateway/log.hpp>

namespace sandgate::gateway {
namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

server::server(asio::io_context& io, const tcp::endpoint& ep, router& r, http_limits limits,
               asio::ssl::context* tls)
    : io_(io), acceptor_(io), router_(r), limits_(limits), tls_(tls) {
  listen_on(acceptor_, ep);
}

unsigned short server::port() const {
  return acceptor_.local_endpoint().port();
}

void server::run() {
  do_accept();
}

void server::stop() {
  boost::system::error_code ec;
  acceptor_.close(ec);
}

void server::do_accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) {
      socket.set_option(tcp::no_delay(true), ec);
      socket.set_option(asio::socket_base::keep_alive(true), ec);
      if (!tls_) {
        std::make_shared<http_session<plain_stream>>(plain_stream(std::move(socket)), router_, limits_)
            ->run();
      } else {
        auto stream = std::make_shared<tls_stream>(std::move(socket), *tls_);
        beast::get_lowest_layer(*stream).expires_after(std::chrono::seconds(30));
        stream->async_handshake(
            asio::ssl::stream_base::server, [this, stream](boost::system::error_code hec) {
              if (hec) return;  // a failed handshake ends the connection
              std::make_shared<http_session<tls_stream>>(std::move(*stream), router_, limits_)->run();
            });
      }
    } else {
      log::warn("accept_failed", {{"error", ec.message()}});
    }
    do_accept();
  });
}

}  // namespace sandgate::gateway
