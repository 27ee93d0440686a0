#pragma once
// The WebSocket clients of one kernel, in the shape of Beast's chat-multi
// shared_state: who has joined, which client sent which request (its
// replies go back to it, or to another connection of its session), and,
// for session_ids whose clients have all left, the output kept for their
// return (the replay buffers).

#include "outgoing.hpp"

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace sandgate::gateway {

struct client_hub_limits {
  std::chrono::seconds replay_retention{600};
  std::size_t replay_buffer_bytes = 32 * 1024 * 1024;  // per session
  std::size_t max_replay_sessions = 64;
  std::size_t max_pending_requests = 10000;
};

class client_hub {
 public:
  // `kernel_id`: for the log lines.
  client_hub(std::string kernel_id, client_hub_limits limits)
      : kernel_id_(std::move(kernel_id)), limits_(limits) {}

  // A client joins: it first gets what its session missed (the replay
  // buffer), and the replies to its session's requests come to it.
  void join(const std::shared_ptr<kernel_client>& client);
  // A client leaves. `unsent`: messages it had not received; with the
  // kernel's output from now on they wait in its session's replay buffer,
  // unless another connection of that session is still here.
  void leave(const std::shared_ptr<kernel_client>& client,
             const std::vector<std::shared_ptr<outgoing>>& unsent);
  // iopub: to every client, and into every replay buffer.
  void broadcast(const std::shared_ptr<outgoing>& out);
  // A reply (shell, control, stdin) to the client whose request is its
  // parent, or into that client's session's replay buffer.
  void deliver_reply(const std::shared_ptr<outgoing>& out);
  // A client's request on shell or control, so that its replies find it.
  // `header`: the request's header text, for answers the kernel never sent
  // (kept only for execute_request).
  void remember(const std::string& msg_id, const std::shared_ptr<kernel_client>& client,
                const std::string& msg_type, std::string header);
  void forget(const std::string& msg_id) { pending_.erase(msg_id); }
  // The execute_requests the kernel will never answer (it died, restarts):
  // each client gets an error, an execute_reply with status error and an
  // idle status, parented by its request. `session`: the gateway's own.
  void answer_lost_executes(const std::string& why, const std::string& session);
  // Closes every client with `code` and `why`, and forgets everything.
  void close_all(unsigned short code, const std::string& why);

  [[nodiscard]] std::size_t size() const noexcept { return clients_.size(); }

 private:
  struct pending_request {
    std::weak_ptr<kernel_client> client;
    std::string session_id;
    std::string msg_type;
    std::string header;
  };
  struct replay_buffer {
    std::deque<std::shared_ptr<outgoing>> messages;
    std::size_t bytes = 0;
    std::chrono::steady_clock::time_point expires;
    bool overflowed = false;
  };

  // The client a reply goes to (see deliver_reply); nullptr when none is here.
  std::shared_ptr<kernel_client> recipient(pending_request& req) const;
  void deliver(pending_request& req, const std::shared_ptr<outgoing>& out);
  void buffer_for(const std::string& session_id, const std::shared_ptr<outgoing>& out);

  std::string kernel_id_;
  client_hub_limits limits_;
  std::vector<std::shared_ptr<kernel_client>> clients_;
  std::unordered_map<std::string, pending_request> pending_;
  std::deque<std::string> pending_order_;  // oldest first, for the bound
  std::map<std::string, replay_buffer> replay_;
};

}  // namespace sandgate::gateway
