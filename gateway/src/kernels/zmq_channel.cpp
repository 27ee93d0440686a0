#include "zmq_channel.hpp"

#include <gateway/log.hpp>

#include <boost/asio/post.hpp>

#include <cerrno>

namespace sandgate::gateway {
namespace {
constexpr int max_messages_per_wakeup = 256;  // fairness between kernels

// libzmq fails a call with EINTR when a signal lands in its internal poll,
// even a non-blocking one, and the gateway takes SIGCHLD whenever a child
// (a sandbox supervisor, a kernel on the host) ends. Nothing was sent or
// received then, mid-message included, so the call is simply made again.
// (An EINTR that escaped once left a kernel's iopub unread for good: the
// kernel, whose iopub waits for its readers, then stalled.)
template <class Call>
auto again_on_eintr(Call&& call) {
  for (;;) {
    try {
      return call();
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
    }
  }
}

}  // namespace

std::shared_ptr<zmq_channel> zmq_channel::connect(boost::asio::io_context& io, zmq::context_t& ctx,
                                                  zmq::socket_type type, const std::string& endpoint,
                                                  handler on_message, const std::string& routing_id,
                                                  int receive_limit) {
  auto ch = std::make_shared<zmq_channel>(io, ctx, type, std::move(on_message));
  if (type == zmq::socket_type::sub) ch->socket_.set(zmq::sockopt::subscribe, "");
  ch->socket_.set(zmq::sockopt::linger, 0);
  if (!routing_id.empty()) ch->socket_.set(zmq::sockopt::routing_id, routing_id);
  ch->socket_.set(zmq::sockopt::sndhwm, 1000);  // then the channel's own queue, then the client waits
  // 0: no limit, and backpressure lives in the client queues.
  ch->socket_.set(zmq::sockopt::rcvhwm, receive_limit);
  ch->socket_.connect(endpoint);
  ch->start_wait();
  return ch;
}

zmq_channel::zmq_channel(boost::asio::io_context& io, zmq::context_t& ctx, zmq::socket_type type,
                         handler on_message)
    : socket_(ctx, type), fd_(io), on_message_(std::move(on_message)) {
  fd_.assign(socket_.get(zmq::sockopt::fd));
}

zmq_channel::~zmq_channel() {
  close();
}

void zmq_channel::close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ec;
  fd_.cancel(ec);
  fd_.release();  // the descriptor belongs to ZeroMQ
  socket_.close();
}

send_result zmq_channel::send(frames f) {
  if (closed_ || f.empty()) return send_result::refused;
  if (queue_.empty() && try_send(f)) {
    post_drain();  // ZMQ_FD is edge-triggered: a send can consume the readiness edge
    return send_result::sent;
  }
  std::size_t bytes = 0;
  for (const auto& part : f)
    bytes += part.size();
  if (queue_.size() >= queue_limits_.messages || queued_bytes_ + bytes > queue_limits_.bytes)
    return send_result::refused;
  queued_bytes_ += bytes;
  queue_.push_back(std::move(f));
  post_drain();  // the failed send may have consumed the edge that room comes with
  return send_result::queued;
}

bool zmq_channel::try_send(const frames& f) {
  for (std::size_t i = 0; i < f.size(); ++i) {
    const auto flags =
        zmq::send_flags::dontwait | (i + 1 < f.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    const auto sent =
        again_on_eintr([&] { return socket_.send(zmq::const_buffer(f[i].data(), f[i].size()), flags); });
    if (!sent) return false;  // only the first frame can fail: ZeroMQ queues multipart atomically
  }
  return true;
}

void zmq_channel::send_queued() {
  if (queue_.empty()) return;
  try {
    while (!queue_.empty() && try_send(queue_.front())) {
      for (const auto& part : queue_.front())
        queued_bytes_ -= part.size();
      queue_.pop_front();
    }
  } catch (const zmq::error_t& e) {
    log::error("zmq_send_failed", {{"error", e.what()}});
    return;
  }
  if (queue_.empty() && on_drained_) {
    boost::asio::post(fd_.get_executor(), [self = weak_from_this()] {
      if (auto s = self.lock(); s && !s->closed_ && s->queue_.empty() && s->on_drained_) s->on_drained_();
    });
  }
}

void zmq_channel::pause() {
  paused_ = true;
}

void zmq_channel::resume() {
  if (!paused_) return;
  paused_ = false;
  post_drain();  // the readiness edge may have come and gone while paused
}

void zmq_channel::start_wait() {
  if (closed_ || waiting_) return;
  waiting_ = true;
  fd_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                 [self = weak_from_this()](const boost::system::error_code& ec) {
                   auto s = self.lock();
                   if (!s) return;
                   s->waiting_ = false;
                   if (ec || s->closed_) return;
                   s->drain();
                 });
}

void zmq_channel::drain() {
  drain_posted_ = false;
  int handled = 0;
  for (;;) {
    if (closed_) return;
    if (handled++ == max_messages_per_wakeup) return post_drain();
    send_queued();
    if (paused_ && queue_.empty()) return;  // resume() drains again
    if (!paused_) {
      const auto got = receive_one();
      if (got == received::message) continue;
      if (got == received::failed) return start_wait();
    }
    // ZMQ_FD is edge-triggered, and signals room to send as well as
    // messages to read. Reading ZMQ_EVENTS processes every command the
    // socket had (which consumes the edge) and then says what it can do
    // now: what changes after it signals the descriptor anew, so waiting
    // then misses nothing.
    int events = 0;
    try {
      events = again_on_eintr([&] { return socket_.get(zmq::sockopt::events); });
    } catch (const zmq::error_t& e) {
      log::error("zmq_events_failed", {{"error", e.what()}});
      return start_wait();
    }
    const bool readable = !paused_ && (events & ZMQ_POLLIN) != 0;
    const bool writable = !queue_.empty() && (events & ZMQ_POLLOUT) != 0;
    if (!readable && !writable) return start_wait();
  }
}

zmq_channel::received zmq_channel::receive_one() {
  // A Jupyter message: a topic or identity, the delimiter, the signature,
  // four parts. Taken as ZeroMQ holds them, and copied out once its size is
  // known to be within the limit.
  std::vector<zmq::message_t> parts;
  parts.reserve(8);
  std::size_t bytes = 0;
  const auto receive = [&] {
    zmq::message_t part;
    if (!again_on_eintr([&] { return socket_.recv(part, zmq::recv_flags::dontwait); })) return false;
    bytes += part.size();
    parts.push_back(std::move(part));
    return true;
  };
  try {
    if (!receive()) return received::nothing;
    while (parts.back().more() && receive()) {
    }
  } catch (const zmq::error_t& e) {
    // Not a state this socket can be in while open; logged, and the
    // channel keeps waiting rather than go deaf.
    log::error("zmq_receive_failed", {{"error", e.what()}});
    return received::failed;
  }
  try {
    if (message_limit_ > 0 && bytes > message_limit_ && on_oversized_) {
      on_oversized_(parts, bytes);
    } else {
      frames f;
      f.reserve(parts.size());
      for (const auto& part : parts)
        f.emplace_back(static_cast<const char*>(part.data()), part.size());
      parts.clear();  // ZeroMQ's copy goes before the handler makes more
      on_message_(std::move(f));
    }
  } catch (const std::exception& e) {
    log::error("zmq_message_handler_failed", {{"error", e.what()}});
  }
  return received::message;
}

void zmq_channel::post_drain() {
  if (drain_posted_) return;
  drain_posted_ = true;
  boost::asio::post(fd_.get_executor(), [self = weak_from_this()] {
    if (auto s = self.lock()) s->drain();
  });
}

}  // namespace sandgate::gateway
