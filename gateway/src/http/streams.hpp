#pragma once
// The two transports a connection can use: plain TCP, or TLS over TCP when
// the gateway has --certfile/--keyfile. Sessions are templates over these.

#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>

#include <filesystem>
#include <memory>

namespace sandgate::gateway {

using plain_stream = boost::beast::tcp_stream;
using tls_stream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

// A TLS server context from PEM files; throws with the file named.
[[nodiscard]] std::unique_ptr<boost::asio::ssl::context> make_tls_context(
    const std::filesystem::path& certfile, const std::filesystem::path& keyfile);

// Half-closes the connection under either transport.
template <class Stream>
void shutdown_send(Stream& stream) {
  boost::beast::error_code ignored;
  boost::beast::get_lowest_layer(stream).socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send,
                                                           ignored);
}

}  // namespace sandgate::gateway
