// The proxy's sandboxes: for each, its network policy, its principal, its
// rate limiter, the socket it accepts on (127.0.0.1:3128 in that sandbox's
// own network namespace, so the socket a connection came in on names the
// sandbox and nothing the sandbox sends can change that), and its open
// connections.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "host_addresses.hpp"
#include "name_resolver.hpp"
#include "rate_limiter.hpp"
#include "sandboxing/network_policy.hpp"
#include "sandboxing/unique_fd.hpp"

namespace sandgate::egress {

class proxy_connection;

struct sandbox_egress {
  std::string id;
  std::string principal;
  sandboxing::network_policy policy;
  rate_limiter limiter{1};
  std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor;
  unsigned acceptor_generation = 0;
  std::map<proxy_connection*, std::weak_ptr<proxy_connection>> connections;
  bool removed = false;
};

class egress_server {
 public:
  using event_sink = std::function<void(nlohmann::json event)>;

  egress_server(boost::asio::io_context& io, name_resolver& resolver, event_sink sink);

  // Creates or updates a sandbox: accepts on `listener` when given (a TCP
  // socket bound in the sandbox, listening or not; a new one replaces the
  // old), and applies `policy` to new connections at once, closing open ones
  // it no longer allows. A new sandbox needs a listener. Returns an error
  // text, or "".
  std::string set(const std::string& id, const std::string& principal, sandboxing::unique_fd listener,
                  const sandboxing::network_policy& policy);
  // Stops accepting for the sandbox and closes its connections.
  void remove(const std::string& id);
  void remove_all();

  [[nodiscard]] name_resolver& resolver() noexcept { return resolver_; }
  // The host's own addresses as they are now (null while they cannot be read: refuse).
  [[nodiscard]] const std::vector<sandboxing::ip_address>* host_own() { return host_own_.current(); }
  void report(nlohmann::json event) { sink_(std::move(event)); }

 private:
  // Accepts for `box` on `listener` from now on, replacing its acceptor;
  // returns an error text, or "".
  std::string accept_on(const std::shared_ptr<sandbox_egress>& box, sandboxing::unique_fd listener);
  void do_accept(const std::shared_ptr<sandbox_egress>& box);

  boost::asio::io_context& io_;
  name_resolver& resolver_;
  event_sink sink_;
  host_addresses host_own_;
  std::map<std::string, std::shared_ptr<sandbox_egress>> boxes_;
};

}  // namespace sandgate::egress
