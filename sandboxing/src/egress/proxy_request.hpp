// What a proxy request asks for, from its head: CONNECT host:port (HTTPS and
// any tunnel), or an HTTP request by absolute URI (or origin-form with a Host
// header). Pure functions over Beast's parsed header; no I/O.
#pragma once

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sandgate::egress {

struct proxy_target {
  bool tunnel = false;  // CONNECT
  std::string host;     // normalized; an IPv6 literal without brackets
  std::uint16_t port = 0;
  std::string authority;  // as it goes in the upstream Host header
  std::string path;       // origin-form, for plain HTTP
};

// "host:port", "[v6]:port", or "host" (then `default_port`); nothing when
// malformed (user info, empty host, bad port).
[[nodiscard]] std::optional<proxy_target> parse_authority(std::string_view text, std::uint16_t default_port);

// The target of a request head, or nothing with `error` set.
[[nodiscard]] std::optional<proxy_target> target_of(
    const boost::beast::http::request<boost::beast::http::empty_body>& req, std::string& error);

// The head sent upstream for plain HTTP: origin-form target, Host from the
// URI, hop-by-hop and proxy fields dropped, "Connection: close" (one request
// per proxied connection).
[[nodiscard]] std::string upstream_head(
    const boost::beast::http::request<boost::beast::http::empty_body>& req, const proxy_target& target);

}  // namespace sandgate::egress
