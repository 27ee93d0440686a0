#pragma once
// A GET to another node (Boost.Beast over plain TCP): one connection per
// request, the whole exchange bounded by one deadline.

#include "peer_directory.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace sandgate::gateway {

struct http_reply {
  boost::system::error_code error;  // set when no response came (timed_out past the deadline)
  unsigned status = 0;
  std::string body;
};

// GET `target` (below the peer's base URL, no leading '/') with `headers`.
// `done` runs exactly once, on `io`, at the latest when `timeout` has passed.
// Bodies past `max_body_bytes` fail the request.
void http_get(boost::asio::io_context& io, const peer& to, const std::string& target,
              const std::vector<std::pair<std::string, std::string>>& headers,
              std::chrono::milliseconds timeout, std::function<void(http_reply)> done,
              std::uint64_t max_body_bytes = 64ull << 20);

}  // namespace sandgate::gateway
