// libFuzzer target: what an egress proxy request asks for
// (sandboxing/src/egress/proxy_request), from a head Beast parsed with the
// proxy's bounds. A target, when there is one, has a host and a port, and its
// authority parses back to the same; the head sent upstream parses again as
// one request for the same path with exactly one Host, the target's (no field
// or line smuggled in). The input, read as an authority, obeys the same.

#include <boost/beast/core/error.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "proxy_request.hpp"

namespace http = boost::beast::http;
using namespace sandgate::egress;

namespace {

void check_authority(const proxy_target& t) {
  if (t.host.empty() || t.port == 0) std::abort();
  const auto back = parse_authority(t.authority, 80);
  if (!back || back->host != t.host || back->port != t.port) std::abort();
}

// The head parsed as a request, or nothing.
std::optional<http::request<http::empty_body>> parse_head(std::string_view text) {
  http::request_parser<http::empty_body> parser;
  parser.header_limit(16 * 1024);
  parser.eager(false);
  boost::beast::error_code ec;
  std::size_t used = 0;
  while (!ec && used < text.size() && !parser.is_header_done())
    used += parser.put(boost::asio::buffer(text.data() + used, text.size() - used), ec);
  if (ec || !parser.is_header_done()) return std::nullopt;
  return parser.release();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (const auto t = parse_authority(text, 80)) check_authority(*t);
  const auto req = parse_head(text);
  if (!req) return 0;
  std::string error;
  const auto target = target_of(*req, error);
  if (!target) {
    if (error.empty()) std::abort();
    return 0;
  }
  check_authority(*target);
  if (target->tunnel) return 0;
  if (target->path.empty() || target->path.front() != '/') std::abort();
  const auto head = upstream_head(*req, *target);
  const auto again = parse_head(head);
  if (!again || again->target() != target->path || again->count(http::field::host) != 1 ||
      (*again)[http::field::host] != target->authority)
    std::abort();
  return 0;
}
