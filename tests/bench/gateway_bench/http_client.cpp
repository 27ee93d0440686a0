#include "http_client.hpp"

#include "kernel_connection.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

namespace sandgate::bench {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

http_reply http_client::request(const std::string& method, const std::string& target,
                                const std::string& json_body) const {
  try {
    asio::io_context io;
    tcp::socket socket(io);
    tcp::resolver resolver(io);
    asio::connect(socket, resolver.resolve(host_, port_));
    socket.set_option(tcp::no_delay(true));
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, host_ + ":" + port_);
    if (!token_.empty()) req.set(http::field::authorization, "token " + token_);
    if (!json_body.empty()) {
      req.set(http::field::content_type, "application/json");
      req.body() = json_body;
    }
    req.keep_alive(false);
    req.prepare_payload();
    http::write(socket, req);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(socket, buffer, res);
    beast::error_code ec;
    socket.shutdown(tcp::socket::shutdown_both, ec);
    return {res.result_int(), std::move(res.body())};
  } catch (const boost::system::system_error& e) {
    throw bench_error(method + " " + target + ": " + e.what());
  }
}

}  // namespace sandgate::bench
