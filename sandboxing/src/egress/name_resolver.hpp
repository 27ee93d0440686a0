// Resolves the names sandboxes ask for, outside any sandbox, in one of three
// ways: getaddrinfo (on Asio's resolver thread), the default; a DNS server
// the operator names (--resolver ADDR:PORT: A and AAAA queries over UDP,
// answered within 2 s, asked twice); or a hosts file (`addr name...` lines)
// first, so that tests control what names mean, then that server if one is
// named. Nothing is cached: every request is resolved afresh, and the caller
// connects to what it checked (no second lookup).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sandboxing/ip_address.hpp"

namespace sandgate::egress {

inline constexpr std::chrono::seconds dns_attempt_timeout{2};
inline constexpr int dns_attempts = 2;

// "ADDR:PORT" or "[V6]:PORT" with a numeric address; nothing otherwise.
[[nodiscard]] std::optional<boost::asio::ip::udp::endpoint> parse_resolver(const std::string& text);

class name_resolver {
 public:
  using handler = std::function<void(std::string error, std::vector<sandboxing::ip_address>)>;

  // Throws std::runtime_error when `hosts_file` is given and unreadable.
  name_resolver(boost::asio::io_context& io, const std::filesystem::path& hosts_file,
                std::optional<boost::asio::ip::udp::endpoint> server = std::nullopt);

  // Every address `host` resolves to, in the resolver's order; `error` set
  // (and no addresses) when there are none.
  void resolve(const std::string& host, handler done);

 private:
  boost::asio::io_context& io_;
  boost::asio::ip::tcp::resolver resolver_;
  std::optional<boost::asio::ip::udp::endpoint> server_;
  bool use_hosts_file_ = false;
  std::map<std::string, std::vector<sandboxing::ip_address>> hosts_;
};

}  // namespace sandgate::egress
