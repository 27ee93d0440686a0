#include "proxy_request.hpp"

#include <boost/beast/http/field.hpp>

#include <algorithm>
#include <charconv>
#include <set>

#include "sandboxing/network_policy.hpp"

namespace sandgate::egress {
namespace http = boost::beast::http;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::optional<proxy_target> parse_authority(std::string_view text, std::uint16_t default_port) {
  if (text.empty() || text.find_first_of("@/?# \t\\") != std::string_view::npos) return std::nullopt;
  proxy_target t;
  std::string_view host = text, port;
  if (text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = text.substr(1, close - 1);
    const auto rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return std::nullopt;
      port = rest.substr(1);
    }
    if (host.find(':') == std::string_view::npos) return std::nullopt;  // brackets only hold IPv6
  } else {
    const auto colon = text.rfind(':');
    if (colon != std::string_view::npos) {
      if (text.find(':') != colon) return std::nullopt;  // a bare IPv6 literal is ambiguous
      host = text.substr(0, colon);
      port = text.substr(colon + 1);
    }
  }
  if (host.empty()) return std::nullopt;
  unsigned value = default_port;
  if (!port.empty() || text.back() == ':') {
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535)
      return std::nullopt;
  }
  if (value == 0) return std::nullopt;
  t.host = sandboxing::normalize_host(host);
  // Normalizing drops one final dot, a name's own: what is left must be a host ("." and "a.." are not).
  if (t.host.empty() || t.host.back() == '.') return std::nullopt;
  t.port = static_cast<std::uint16_t>(value);
  const bool v6 = t.host.find(':') != std::string::npos;
  t.authority = (v6 ? "[" + t.host + "]" : t.host) + (t.port == 80 ? "" : ":" + std::to_string(t.port));
  return t;
}

std::optional<proxy_target> target_of(const http::request<http::empty_body>& req, std::string& error) {
  const std::string_view target = req.target();
  if (req.version() != 11 && req.version() != 10) {
    error = "only HTTP/1.0 and HTTP/1.1 are proxied";
    return std::nullopt;
  }
  if (req.method() == http::verb::connect) {
    auto t = parse_authority(target, 0);
    if (!t) error = "CONNECT needs host:port, not \"" + std::string(target.substr(0, 200)) + "\"";
    if (t) t->tunnel = true;
    return t;
  }
  if (target.starts_with("/")) {  // origin-form: a client that was not told it talks to a proxy
    auto t = parse_authority(req[http::field::host], 80);
    if (!t) error = "the request has no usable Host header";
    if (t) t->path = std::string(target);
    return t;
  }
  const auto scheme_end = target.find("://");
  if (scheme_end == std::string_view::npos || lower(target.substr(0, scheme_end)) != "http") {
    error = "only http:// URLs are proxied as requests (HTTPS goes through CONNECT)";
    return std::nullopt;
  }
  const auto rest = target.substr(scheme_end + 3);
  const auto path_start = std::min(rest.find_first_of("/?#"), rest.size());
  auto t = parse_authority(rest.substr(0, path_start), 80);
  if (!t) {
    error = "malformed URL authority \"" +
            std::string(rest.substr(0, std::min<std::size_t>(path_start, 200))) + "\"";
    return std::nullopt;
  }
  std::string path(rest.substr(path_start));
  if (const auto hash = path.find('#'); hash != std::string::npos) path.resize(hash);
  if (path.empty() || path.front() != '/') path.insert(0, "/");
  t->path = path;
  return t;
}

std::string upstream_head(const http::request<http::empty_body>& req, const proxy_target& target) {
  std::set<std::string> drop = {"host",       "connection", "proxy-connection", "proxy-authorization",
                                "keep-alive", "te",         "trailer",          "upgrade"};
  const std::string listed = lower(req[http::field::connection]);
  for (std::size_t start = 0; start <= listed.size();) {
    const auto end = std::min(listed.find(',', start), listed.size());
    const auto first = listed.find_first_not_of(" \t", start);
    const auto last = listed.find_last_not_of(" \t", end == 0 ? 0 : end - 1);
    if (first < end && last != std::string::npos && last >= first)
      drop.insert(listed.substr(first, last - first + 1));
    start = end + 1;
  }
  std::string head = std::string(req.method_string()) + " " + target.path +
                     " HTTP/1.1\r\nHost: " + target.authority + "\r\n";
  for (const auto& f : req) {
    const std::string name = lower(f.name_string());
    if (drop.contains(name)) continue;
    head += std::string(f.name_string()) + ": " + std::string(f.value()) + "\r\n";
  }
  head += "Connection: close\r\n\r\n";
  return head;
}

}  // namespace sandgate::egress
