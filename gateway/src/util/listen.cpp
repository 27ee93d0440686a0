#include "listen.hpp"

#include <stdexcept>
#include <string>

namespace sandgate::gateway {
namespace asio = boost::asio;

void listen_on(asio::ip::tcp::acceptor& acceptor, const asio::ip::tcp::endpoint& ep) {
  boost::system::error_code ec;
  acceptor.open(ep.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    throw std::runtime_error("cannot listen on " + ep.address().to_string() + ":" +
                             std::to_string(ep.port()) + ": " + ec.message());
}

}  // namespace sandgate::gateway
