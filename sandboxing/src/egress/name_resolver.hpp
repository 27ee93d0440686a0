// Resolves the names sandboxes ask for, outside any sandbox: getaddrinfo (on
// Asio's resolver thread) in production, or only a hosts file (`addr name...`
// lines) when one is given, so that tests control what names mean.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sandboxing/ip_address.hpp"

namespace sandgate::egress {

class name_resolver {
 public:
  using handler = std::function<void(std::string error, std::vector<sandboxing::ip_address>)>;

  // Throws std::runtime_error when `hosts_file` is given and unreadable.
  name_resolver(boost::asio::io_context& io, const std::filesystem::path& hosts_file);

  // Every address `host` resolves to, in the resolver's order; `error` set
  // (and no addresses) when there are none.
  void resolve(const std::string& host, handler done);

 private:
  boost::asio::ip::tcp::resolver resolver_;
  bool use_hosts_file_ = false;
  std::map<std::string, std::vector<sandboxing::ip_address>> hosts_;
};

// The host's own interface addresses (getifaddrs), refused as egress targets.
[[nodiscard]] std::vector<sandboxing::ip_address> host_addresses();

}  // namespace sandgate::egress
