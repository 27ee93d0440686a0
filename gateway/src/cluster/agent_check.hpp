#pragma once
// HAProxy's agent-check: each connection to the port reads one line and is
// closed. "ready N%\n" sets the server's weight to N% of its configured one
// (N: the share of --max-kernels still free) and ends a drain; "drain\n"
// (full, or draining on request) keeps new creates away while requests for
// this node's ids still reach it.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstddef>
#include <functional>
#include <string>

namespace sandgate::gateway {

// The agent's line for `free` of `max` kernel slots.
[[nodiscard]] std::string capacity_report(std::size_t free, std::size_t max, bool draining);

class agent_check {
 public:
  // Listens on `endpoint` (throws when it cannot); `report` gives the line.
  agent_check(boost::asio::io_context& io, const boost::asio::ip::tcp::endpoint& endpoint,
              std::function<std::string()> report);
  [[nodiscard]] unsigned short port() const { return acceptor_.local_endpoint().port(); }
  void stop();

 private:
  void accept();
  // A failed accept (out of descriptors, most often) is logged once per
  // streak and tried again after a pause, never at once in a spin.
  void accept_later(const boost::system::error_code& ec);

  boost::asio::ip::tcp::acceptor acceptor_;
  std::function<std::string()> report_;
  boost::asio::steady_timer retry_;
  bool failing_ = false;
};

}  // namespace sandgate::gateway
