#include "name_resolver.hpp"

#include <charconv>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "dns_lookup.hpp"
#include "sandboxing/network_policy.hpp"

namespace sandgate::egress {
namespace sb = sandgate::sandboxing;

std::optional<boost::asio::ip::udp::endpoint> parse_resolver(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  std::string host = text.substr(0, colon);
  const bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) host = host.substr(1, host.size() - 2);
  const auto address = sb::parse_ip(host);
  unsigned port = 0;
  const char* end = text.data() + text.size();
  if (!address || address->v4 == bracketed ||
      std::from_chars(text.data() + colon + 1, end, port).ptr != end || port == 0 || port > 65535)
    return std::nullopt;
  boost::system::error_code ec;
  const auto a = boost::asio::ip::make_address(host, ec);
  if (ec) return std::nullopt;
  return boost::asio::ip::udp::endpoint(a, static_cast<std::uint16_t>(port));
}

name_resolver::name_resolver(boost::asio::io_context& io, const std::filesystem::path& hosts_file,
                             std::optional<boost::asio::ip::udp::endpoint> server)
    : io_(io), resolver_(io), server_(std::move(server)) {
  if (hosts_file.empty()) return;
  use_hosts_file_ = true;
  std::ifstream in(hosts_file);
  if (!in) throw std::runtime_error("cannot read hosts file " + hosts_file.string());
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string address, name;
    if (!(words >> address)) continue;
    const auto a = sb::parse_ip(address);
    if (!a) throw std::runtime_error(hosts_file.string() + ": not an address: " + address);
    while (words >> name)
      hosts_[sb::normalize_host(name)].push_back(*a);
  }
}

void name_resolver::resolve(const std::string& host, handler done) {
  if (use_hosts_file_) {
    if (auto it = hosts_.find(host); it != hosts_.end()) return done("", it->second);
    if (!server_) return done("cannot resolve " + host + ": not in the hosts file", {});
  }
  if (server_) return dns_lookup::start(io_, *server_, host, std::move(done));
  resolver_.async_resolve(
      host, "0", boost::asio::ip::resolver_base::numeric_service,
      [host, done = std::move(done)](const boost::system::error_code& ec,
                                     const boost::asio::ip::tcp::resolver::results_type& results) {
        if (ec) return done("cannot resolve " + host + ": " + ec.message(), {});
        std::vector<sb::ip_address> out;
        for (const auto& entry : results) {
          const auto address = entry.endpoint().address();
          sb::ip_address a;
          if (address.is_v4()) {
            a.v4 = true;
            const auto bytes = address.to_v4().to_bytes();
            std::copy(bytes.begin(), bytes.end(), a.bytes.begin());
          } else {
            const auto bytes = address.to_v6().to_bytes();
            std::copy(bytes.begin(), bytes.end(), a.bytes.begin());
          }
          if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
        }
        if (out.empty()) return done("cannot resolve " + host + ": no addresses", {});
        done("", std::move(out));
      });
}

}  // namespace sandgate::egress
