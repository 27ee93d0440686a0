#pragma once
// A TCP listener for the gateway's ports (the HTTP server, HAProxy's agent-check).

#include <boost/asio/ip/tcp.hpp>

namespace sandgate::gateway {

// Opens, binds (SO_REUSEADDR) and listens; throws std::runtime_error naming the address.
void listen_on(boost::asio::ip::tcp::acceptor& acceptor, const boost::asio::ip::tcp::endpoint& ep);

}  // namespace sandgate::gateway
