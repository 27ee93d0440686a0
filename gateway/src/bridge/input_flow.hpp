#pragma once
// What a kernel does with client messages it cannot send on at once: the
// clients that must stop reading their WebSocket until the kernel's input
// queue has gone out, and the answer to a message that had to be refused,
// so that no client waits forever for a reply that will not come.

#include "outgoing.hpp"

#include <jupyter_protocol/message.hpp>

#include <memory>
#include <string>
#include <vector>

namespace sandgate::gateway {

// Clients whose reading waits for room in a kernel's input queue. Each is
// resumed once, by resume_all(), whatever made room (the queue went out, the
// kernel (re)started, its channels closed).
class input_waiters {
 public:
  void add(const std::shared_ptr<kernel_client>& client);
  void resume_all();
  [[nodiscard]] bool empty() const noexcept { return waiting_.empty(); }

 private:
  std::vector<std::weak_ptr<kernel_client>> waiting_;
};

// The messages that answer a client's message the gateway could not send to
// the kernel: for a `*_request`, its `*_reply` with status `error` (ename
// `GatewayInputRefused`, evalue `why`); for every message, an idle status
// whose parent is it, on iopub. `session` is the gateway's session id.
[[nodiscard]] std::vector<std::shared_ptr<outgoing>> refusal_answers(protocol::channel ch,
                                                                     const protocol::message& request,
                                                                     const std::string& why,
                                                                     const std::string& session);

}  // namespace sandgate::gateway
