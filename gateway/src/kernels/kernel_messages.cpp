// What comes from the kernel (to clients, the execution log and the
// coordinator's state) and what comes from clients (to the kernel, held
// while it starts, or refused with an answer).

#include "execution_watchdog.hpp"
#include "journal_takeover.hpp"
#include "kernel.hpp"
#include "kernel_channels.hpp"

#include "../util/metrics.hpp"

#include <gateway/log.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>

namespace sandgate::gateway {

using protocol::channel;

void kernel::touch() {
  active_at_ = std::chrono::steady_clock::now();
  last_activity_ = std::chrono::system_clock::now();  // formatted only when asked for
}

void kernel::on_kernel_message(channel ch, protocol::message&& msg) {
  touch();
  // The execution_state of a status message, read once.
  const std::string status = ch == channel::iopub ? execution_state_of(msg) : std::string();
  if (!status.empty()) on_status(msg, status);
  auto out = std::make_shared<outgoing>(ch, std::move(msg));
  if (output_) out->charge_to(output_);
  const auto& sent = out->message();
  // While a taken-over kernel's journal is still to be read, iopub waits to
  // be recorded after what the journal holds.
  const bool held = ch == channel::iopub && takeover_->waiting();
  if (held) takeover_->hold(sent);
  if (ch == channel::iopub)
    clients_.broadcast(out);
  else if (!own_.answer(sent))
    clients_.deliver_reply(out);
  // Recorded after it is on its way to the clients, off their round trip.
  if (!held && (ch != channel::iopub || !takeover_->any() || !takeover_->record_live(sent, status)))
    record(ch, sent, status);
}

// A kernel_info's busy and idle say nothing of the kernel's cells: one
// answered on control while a cell runs reports idle. Nor does a late
// "starting": ipykernel's control thread can answer the probe before its
// main thread publishes that, and the kernel is ready by then.
void kernel::on_status(const protocol::message& msg, const std::string& state) {
  if ((state == "busy" || state == "idle") && phase_ == phase::running &&
      msg.parent.msg_type != "kernel_info_request") {
    state_ = state;
    state_presumed_ = false;
  }
}

void kernel::record(channel ch, const protocol::message& msg, std::string_view status) {
  if (executions_.on_message(ch, msg, status) && !status.empty())
    watchdog_->on_state(msg.parent.msg_id, status);
}

namespace {

std::string describe_bytes(std::size_t bytes) {
  char mib[32];
  std::snprintf(mib, sizeof mib, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return std::to_string(bytes) + " bytes (" + mib + ")";
}

}  // namespace

// A message over the per-message limit is not relayed: in its place the
// clients and the execution record get a note naming its size, a stderr
// stream for output, an error reply for a reply, with the same parent.
void kernel::on_oversized(channel ch, protocol::message&& head, std::size_t bytes) {
  const std::string what = "a " + head.msg_type() + " message of " + describe_bytes(bytes) +
                           " from the kernel was not relayed: the gateway's limit is " +
                           describe_bytes(opts_.limits.max_message_bytes) +
                           " per message (--max-message-bytes)";
  std::string type;
  nlohmann::json content;
  if (ch == channel::iopub) {
    type = "stream";
    content = {{"name", "stderr"}, {"text", "[Sandgate] " + what + "\n"}};
  } else if (head.msg_type().ends_with("_reply")) {
    type = head.msg_type();
    content = {{"status", "error"},
               {"ename", "GatewayMessageTooLarge"},
               {"evalue", what},
               {"traceback", nlohmann::json::array({"GatewayMessageTooLarge: " + what})}};
    if (type == "execute_reply") content["execution_count"] = nullptr;
  } else {
    return;  // nobody waits for it; the log says it came
  }
  auto note = protocol::make_message(type, content.dump(), head.head.session, head.head.username);
  note.identities = std::move(head.identities);
  note.parent_header = std::move(head.parent_header);
  note.parent = std::move(head.parent);
  if (auto record = executions_.find(note.parent.msg_id)) record->truncated = true;
  on_kernel_message(ch, std::move(note));
}

void kernel::send_status(std::string_view state) {
  state_ = std::string(state);
  clients_.broadcast(
      std::make_shared<outgoing>(channel::iopub, protocol::make_status(state, session_, nullptr)));
}

void kernel::join(const std::shared_ptr<kernel_client>& client) {
  clients_.join(client);
  if (phase_ == phase::running) nudge();  // the nudge clients expect on connect, as jupyter_server does
}

void kernel::leave(const std::shared_ptr<kernel_client>& client,
                   const std::vector<std::shared_ptr<outgoing>>& unsent) {
  if (phase_ == phase::ended) return;
  clients_.leave(client, unsent);
}

void kernel::hold_output() {
  channels_->hold_output();
}

void kernel::release_output() {
  channels_->release_output();
}

bool kernel::from_client(const std::shared_ptr<kernel_client>& client, channel ch, protocol::message msg) {
  if (phase_ == phase::ended || phase_ == phase::stopping || ch == channel::hb || ch == channel::iopub)
    return true;
  if (phase_ == phase::starting || phase_ == phase::restarting || phase_ == phase::created) {
    // The kernel's sockets are not there yet: hold the message until it is
    // ready, and the client's next ones in its WebSocket past a bound.
    if (held_.size() >= 2 * max_held_messages)
      refuse(client, ch, msg, "too many messages wait for the kernel to start");
    else
      held_.push_back({client, ch, std::move(msg)});
    if (held_.size() < max_held_messages) return true;
    input_waiters_.add(client);
    return false;
  }
  if (ch == channel::shell || ch == channel::control)
    clients_.remember(msg.msg_id(), client, msg.msg_type(), msg.header);
  touch();
  if (channels_->send(ch, msg) == send_result::refused) {
    clients_.forget(msg.msg_id());
    refuse(client, ch, msg, "the kernel's input queue is full");
  } else if (ch == channel::shell && msg.msg_type() == "execute_request") {
    // Recorded once it is on its way: the kernel's answer can only be read
    // after this returns.
    executions_.begin(msg.msg_id(), msg.content, client->principal());
  }
  if (!channels_->congested(ch)) return true;
  // The kernel reads slower than the client writes: the client waits, in
  // its WebSocket and its TCP connection, until the queue has gone out.
  input_waiters_.add(client);
  return false;
}

// What clients sent while the kernel (re)started, now that it runs.
void kernel::send_held() {
  for (auto& h : std::exchange(held_, {}))
    if (auto c = h.client.lock()) (void)from_client(c, h.ch, std::move(h.msg));  // false: c waits
  if (!channels_->congested()) input_waiters_.resume_all();
}

void kernel::refuse(const std::shared_ptr<kernel_client>& client, channel ch, const protocol::message& msg,
                    const std::string& why) {
  ++gateway_metrics().client_messages_refused;
  log::warn("kernel_input_refused", {{"kernel_id", id()},
                                     {"channel", protocol::to_string(ch)},
                                     {"msg_id", msg.msg_id()},
                                     {"msg_type", msg.msg_type()},
                                     {"why", why}});
  for (const auto& out : refusal_answers(ch, msg, why, session_))
    client->deliver(out);
}

}  // namespace sandgate::gateway
