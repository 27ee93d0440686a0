#include "kernel_channels.hpp"

#include "../util/metrics.hpp"

#include <gateway/log.hpp>
#include <jupyter_protocol/wire.hpp>

namespace sandgate::gateway {

using protocol::channel;

kernel_channels::kernel_channels(boost::asio::io_context& io, zmq::context_t& zmq, std::string kernel_id,
                                 std::string key, std::string identity, bool iopub_backpressure,
                                 message_handler on_message)
    : io_(io),
      zmq_(zmq),
      kernel_id_(std::move(kernel_id)),
      signer_(std::move(key)),
      identity_(std::move(identity)),
      iopub_backpressure_(iopub_backpressure),
      on_message_(std::move(on_message)),
      timer_(io) {}

kernel_channels::~kernel_channels() {
  close();
}

zmq_channel* kernel_channels::channel_for(channel ch) const {
  switch (ch) {
    case channel::shell:
      return shell_.get();
    case channel::control:
      return control_.get();
    case channel::stdin_:
      return stdin_.get();
    case channel::iopub:
      return iopub_.get();
    case channel::hb:
      return nullptr;
  }
  return nullptr;
}

void kernel_channels::open(std::filesystem::path dir, std::vector<std::string> names, uid_t owner,
                           ready_handler ready) {
  close();
  dir_ = std::move(dir);
  names_ = std::move(names);
  owner_ = owner;
  ready_ = std::move(ready);
  probe_answered_ = iopub_seen_ = false;
  wait_for_sockets();
}

void kernel_channels::wait_for_sockets() {
  if (!ready_) return;
  if (pins_.pin(dir_, names_, owner_)) {
    try {
      connect();
    } catch (const std::exception& e) {  // out of descriptors or sockets: fail now, not at the timeout
      log::error("kernel_connect_failed", {{"kernel_id", kernel_id_}, {"error", e.what()}});
      auto ready = std::exchange(ready_, nullptr);
      close();
      return ready(std::string("cannot connect to the kernel: ") + e.what());
    }
    return probe();
  }
  timer_.expires_after(std::chrono::milliseconds(10));
  timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
    if (auto self = weak.lock(); self && !ec) self->wait_for_sockets();
  });
}

void kernel_channels::connect() {
  // A kernel whose iopub waits for its subscribers is read with a bounded
  // pipe, so that holding its output back reaches the kernel.
  const int iopub_limit = iopub_backpressure_ ? held_iopub_messages : 0;
  std::weak_ptr<kernel_channels> weak = weak_from_this();
  auto make = [&](std::size_t i, channel ch, zmq::socket_type type, int receive_limit) {
    // shell and stdin share one routing id: a kernel sends input_request to
    // the identity of the shell request's sender, as jupyter_client arranges.
    const bool shared_id = ch == channel::shell || ch == channel::stdin_;
    return zmq_channel::connect(
        io_, zmq_, type, pins_.endpoint(i),
        [weak, ch](std::vector<std::string>&& f) {
          if (auto self = weak.lock()) self->on_frames(ch, std::move(f));
        },
        shared_id ? identity_ : std::string(), receive_limit);
  };
  shell_ = make(0, channel::shell, zmq::socket_type::dealer, 0);
  control_ = make(1, channel::control, zmq::socket_type::dealer, 0);
  stdin_ = make(2, channel::stdin_, zmq::socket_type::dealer, 0);
  iopub_ = make(3, channel::iopub, zmq::socket_type::sub, iopub_limit);
  for (const auto& input : {shell_, control_, stdin_})
    input->on_drained([weak] {
      if (auto self = weak.lock(); self && !self->congested() && self->on_drained_) self->on_drained_();
    });
  if (message_limit_ > 0) {
    for (const auto ch : {channel::shell, channel::control, channel::stdin_, channel::iopub})
      channel_for(ch)->set_message_limit(message_limit_,
                                         [weak, ch](std::vector<zmq::message_t>& parts, std::size_t bytes) {
                                           if (auto self = weak.lock()) self->on_oversized(ch, parts, bytes);
                                         });
  }
  update_iopub_pause();
}

void kernel_channels::set_message_limit(std::size_t bytes, oversized_handler on_oversized) {
  message_limit_ = bytes;
  on_oversized_ = std::move(on_oversized);
}

void kernel_channels::close() {
  timer_.cancel();
  ready_ = nullptr;
  probes_.clear();
  for (auto* ch : {&shell_, &control_, &stdin_, &iopub_}) {
    if (*ch) (*ch)->close();
    ch->reset();
  }
  pins_.reset();
}

// On control as well as shell: a kernel taken over in the middle of a cell
// answers there at once, while its shell waits for the cell. The first
// answer counts.
void kernel_channels::probe() {
  if (!ready_) return;
  for (const auto ch : {channel::shell, channel::control}) {
    auto msg = protocol::make_message("kernel_info_request", "{}", identity_);
    probes_.insert(msg.msg_id());
    send(ch, msg);
  }
  timer_.expires_after(std::chrono::seconds(1));
  timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
    if (auto self = weak.lock(); self && !ec) self->probe();
  });
}

void kernel_channels::on_frames(channel ch, std::vector<std::string>&& frames) {
  auto& counters = gateway_metrics();
  ++counters.messages_from_kernels;
  for (const auto& f : frames)
    counters.bytes_from_kernels += f.size();
  protocol::message msg;
  if (auto ec = protocol::decode(std::move(frames), signer_, msg)) {
    log::warn("kernel_message_rejected",
              {{"kernel_id", kernel_id_}, {"channel", protocol::to_string(ch)}, {"error", ec.message()}});
    return;
  }
  if (!probed(ch, msg)) return;
  const bool iopub_while_probing = ready_ && ch == channel::iopub;
  auto weak = weak_from_this();
  on_message_(ch, std::move(msg));
  // Ready needs iopub too: until the subscription carries messages, output
  // would be lost. Told after the message, which the kernel has handled.
  if (auto self = weak.lock(); self && iopub_while_probing && self->probe_answered_) self->become_ready();
}

void kernel_channels::on_oversized(channel ch, std::vector<zmq::message_t>& parts, std::size_t bytes) {
  auto& counters = gateway_metrics();
  ++counters.messages_from_kernels;
  counters.bytes_from_kernels += bytes;
  std::vector<std::string_view> views;
  views.reserve(parts.size());
  for (const auto& part : parts)
    views.emplace_back(static_cast<const char*>(part.data()), part.size());
  protocol::message head;
  if (auto ec = protocol::decode_head(views, signer_, head)) {
    log::warn("kernel_message_rejected",
              {{"kernel_id", kernel_id_}, {"channel", protocol::to_string(ch)}, {"error", ec.message()}});
    return;
  }
  parts.clear();  // nothing more is read of it
  ++counters.messages_over_limit;
  log::warn("kernel_message_over_limit", {{"kernel_id", kernel_id_},
                                          {"channel", protocol::to_string(ch)},
                                          {"msg_type", head.msg_type()},
                                          {"bytes", std::to_string(bytes)}});
  if (on_oversized_) on_oversized_(ch, std::move(head), bytes);
}

bool kernel_channels::probed(channel ch, const protocol::message& msg) {
  if (ch == channel::iopub) {
    if (ready_) iopub_seen_ = true;
    return true;
  }
  if (probes_.count(msg.parent.msg_id) == 0) return true;
  if (!ready_ || msg.msg_type() != "kernel_info_reply") return false;
  probe_answered_ = true;
  if (iopub_seen_) {
    become_ready();
    return false;
  }
  // The kernel answers but the subscription missed its status (it was still
  // being set up, as on a re-attach): probe again soon.
  timer_.expires_after(std::chrono::milliseconds(50));
  timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
    if (auto self = weak.lock(); self && !ec) self->probe();
  });
  return false;
}

void kernel_channels::become_ready() {
  timer_.cancel();
  if (auto ready = std::exchange(ready_, nullptr)) ready({});
}

send_result kernel_channels::send(channel ch, const protocol::message& msg) {
  auto* socket = channel_for(ch);
  if (!socket) return send_result::refused;
  const auto result = socket->send(protocol::encode(msg, signer_));
  if (result == send_result::refused)
    log::warn("kernel_send_dropped",
              {{"kernel_id", kernel_id_}, {"channel", protocol::to_string(ch)}, {"msg_id", msg.msg_id()}});
  return result;
}

bool kernel_channels::congested() const {
  for (const auto* c : {shell_.get(), control_.get(), stdin_.get()})
    if (c && c->congested()) return true;
  return false;
}

bool kernel_channels::congested(channel ch) const {
  const auto* c = channel_for(ch);
  return c && c->congested();
}

void kernel_channels::hold_output() {
  if (++output_holds_ == 1 && iopub_backpressure_) ++gateway_metrics().output_holds;
  update_iopub_pause();
}

void kernel_channels::release_output() {
  if (output_holds_ == 0) return;
  --output_holds_;
  update_iopub_pause();
}

void kernel_channels::set_over_budget(bool over) {
  over_budget_ = over;
  update_iopub_pause();
}

void kernel_channels::update_iopub_pause() {
  if (!iopub_) return;
  if (iopub_backpressure_ && (output_holds_ > 0 || over_budget_))
    iopub_->pause();
  else
    iopub_->resume();
}

}  // namespace sandgate::gateway
