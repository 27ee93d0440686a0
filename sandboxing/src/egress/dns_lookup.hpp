// One name asked of the operator's DNS server: an A and an AAAA query over
// UDP from a socket connected to that server (datagrams from elsewhere never
// arrive), each with a random id, checked against the question it asked;
// unanswered queries are sent again once after dns_attempt_timeout, and
// the lookup ends at the latest after dns_attempts of them.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dns_message.hpp"

namespace sandgate::egress {

class dns_lookup : public std::enable_shared_from_this<dns_lookup> {
 public:
  using handler = std::function<void(std::string error, std::vector<sandboxing::ip_address>)>;

  // `done` gets the A then the AAAA addresses, or why there are none.
  static void start(boost::asio::io_context& io, const boost::asio::ip::udp::endpoint& server,
                    std::string host, handler done);

  dns_lookup(boost::asio::io_context& io, const boost::asio::ip::udp::endpoint& server, std::string host,
             handler done);

 private:
  struct query {
    dns::record_type type = dns::record_type::a;
    std::uint16_t id = 0;
    std::string wire;
    bool answered = false;
    dns::answer result;
  };

  void begin();
  void send_unanswered();
  void arm_timer();
  void do_receive();
  void finish(const std::string& error);

  boost::asio::ip::udp::socket socket_;
  boost::asio::ip::udp::endpoint server_;
  boost::asio::steady_timer timer_;
  std::string host_;
  handler done_;
  std::array<query, 2> queries_;  // A, then AAAA
  std::array<char, 4096> buf_{};
  int attempts_ = 0;
  bool finished_ = false;
};

}  // namespace sandgate::egress
