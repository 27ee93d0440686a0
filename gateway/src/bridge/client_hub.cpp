#include "client_hub.hpp"

#include <gateway/log.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>

namespace sandgate::gateway {

using protocol::channel;

void client_hub::join(const std::shared_ptr<kernel_client>& client) {
  clients_.push_back(client);
  const auto& session = client->session_id();
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(replay_, [now](const auto& kv) { return kv.second.expires < now; });
  if (session.empty()) return;
  if (auto it = replay_.find(session); it != replay_.end()) {
    for (const auto& out : it->second.messages)
      client->deliver(out);
    replay_.erase(it);
  }
  for (auto& [msg_id, req] : pending_)
    if (req.session_id == session) recipient(req);
}

void client_hub::leave(const std::shared_ptr<kernel_client>& client,
                       const std::vector<std::shared_ptr<outgoing>>& unsent) {
  std::erase(clients_, client);
  const auto& session = client->session_id();
  if (session.empty()) return;
  if (std::any_of(clients_.begin(), clients_.end(),
                  [&](const auto& c) { return c->session_id() == session; }))
    return;
  auto& buf = replay_[session];
  buf.expires = std::chrono::steady_clock::now() + limits_.replay_retention;
  for (const auto& out : unsent)
    buffer_for(session, out);
  while (replay_.size() > limits_.max_replay_sessions) {
    auto oldest = std::min_element(replay_.begin(), replay_.end(), [](const auto& a, const auto& b) {
      return a.second.expires < b.second.expires;
    });
    replay_.erase(oldest);
  }
}

void client_hub::broadcast(const std::shared_ptr<outgoing>& out) {
  for (const auto& c : clients_)
    c->deliver(out);
  for (auto& [session, buf] : replay_)
    buffer_for(session, out);
}

void client_hub::deliver_reply(const std::shared_ptr<outgoing>& out) {
  const auto& m = out->message();
  auto it = pending_.find(m.parent.msg_id);
  if (it == pending_.end()) {
    log::debug("kernel_reply_unrouted", {{"kernel_id", kernel_id_}, {"msg_type", m.msg_type()}});
    return;
  }
  deliver(it->second, out);
  if (m.msg_type().ends_with("_reply")) pending_.erase(it);  // its id stays in pending_order_ until evicted
}

void client_hub::remember(const std::string& msg_id, const std::shared_ptr<kernel_client>& client,
                          const std::string& msg_type, std::string header) {
  if (msg_id.empty()) return;
  if (msg_type != "execute_request") header.clear();
  if (pending_.emplace(msg_id, pending_request{client, client->session_id(), msg_type, std::move(header)})
          .second)
    pending_order_.push_back(msg_id);
  while (pending_order_.size() > limits_.max_pending_requests) {
    pending_.erase(pending_order_.front());
    pending_order_.pop_front();
  }
}

void client_hub::answer_lost_executes(const std::string& why, const std::string& session) {
  nlohmann::json error = {
      {"ename", "KernelDied"}, {"evalue", why}, {"traceback", nlohmann::json::array({"KernelDied: " + why})}};
  const std::string error_content = error.dump();
  error["status"] = "error";
  error["execution_count"] = nullptr;
  const std::string reply_content = error.dump();
  for (auto it = pending_.begin(); it != pending_.end();) {
    auto& req = it->second;
    if (req.msg_type != "execute_request") {
      ++it;
      continue;
    }
    protocol::message request;
    request.header = req.header;
    if (!protocol::parse_header(request.header, request.head, false)) {
      const std::shared_ptr<outgoing> answers[] = {
          std::make_shared<outgoing>(channel::iopub, protocol::make_reply(request, "error", error_content)),
          std::make_shared<outgoing>(channel::shell,
                                     protocol::make_reply(request, "execute_reply", reply_content)),
          std::make_shared<outgoing>(channel::iopub, protocol::make_status("idle", session, &request))};
      for (const auto& out : answers)
        deliver(req, out);
    }
    it = pending_.erase(it);
  }
}

void client_hub::close_all(unsigned short code, const std::string& why) {
  auto clients = std::exchange(clients_, {});
  for (const auto& c : clients)
    c->close(code, why);
  replay_.clear();
  pending_.clear();
  pending_order_.clear();
}

// The attached client a reply goes to: the one that sent the request, else
// another connection of the same session. A client that has left (its
// WebSocket is closing, a last write may still be in flight) gets nothing:
// its session's replay buffer does.
std::shared_ptr<kernel_client> client_hub::recipient(pending_request& req) const {
  if (auto client = req.client.lock();
      client && std::find(clients_.begin(), clients_.end(), client) != clients_.end())
    return client;
  if (req.session_id.empty()) return nullptr;
  for (const auto& c : clients_) {
    if (c->session_id() == req.session_id) {
      req.client = c;
      return c;
    }
  }
  return nullptr;
}

void client_hub::deliver(pending_request& req, const std::shared_ptr<outgoing>& out) {
  if (auto client = recipient(req))
    client->deliver(out);
  else
    buffer_for(req.session_id, out);
}

void client_hub::buffer_for(const std::string& session_id, const std::shared_ptr<outgoing>& out) {
  auto it = replay_.find(session_id);
  if (it == replay_.end()) return;
  auto& buf = it->second;
  buf.bytes += out->size_bytes();
  buf.messages.push_back(out);
  while (buf.bytes > limits_.replay_buffer_bytes && !buf.messages.empty()) {
    buf.bytes -= buf.messages.front()->size_bytes();
    buf.messages.pop_front();
    if (!buf.overflowed)
      log::warn("replay_buffer_overflow", {{"kernel_id", kernel_id_}, {"session_id", session_id}});
    buf.overflowed = true;
  }
}

}  // namespace sandgate::gateway
