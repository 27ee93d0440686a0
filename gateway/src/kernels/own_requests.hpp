#pragma once
// The gateway's own requests to a kernel: the kernel_info nudge a client
// gets on connect, silent executes, REST executes. Their replies go to the
// handler each request registered, by msg_id, and never to a client.

#include <jupyter_protocol/message.hpp>

#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <unordered_map>

namespace sandgate::gateway {

class own_requests {
 public:
  // Told how the request ended: empty when the kernel answered "ok", else why not.
  using done_handler = std::function<void(std::string error)>;

  explicit own_requests(std::size_t max_requests) : max_requests_(max_requests) {}

  // A request sent; `done` (may be empty) gets its end.
  void add(const std::string& msg_id, done_handler done = nullptr);
  void forget(const std::string& msg_id) { requests_.erase(msg_id); }
  // Whether `msg` is a reply (or other output on shell, control or stdin)
  // to one of them; a reply ends its request.
  bool answer(const protocol::message& msg);
  // Ends every request with `why` (the kernel ended or restarted).
  void fail_all(const std::string& why);

 private:
  std::size_t max_requests_;
  std::unordered_map<std::string, done_handler> requests_;
  std::deque<std::string> order_;  // oldest first, for the bound
};

}  // namespace sandgate::gateway
