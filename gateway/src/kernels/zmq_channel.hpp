#pragma once
// One ZeroMQ socket driven by the gateway's io_context: its ZMQ_FD is
// watched with an Asio descriptor, and every readable message is handed to
// a callback as frames. Sends never block: what ZeroMQ's full pipe cannot
// take waits in a queue of the channel's own, bounded in messages and bytes,
// and goes out in order as the peer reads.

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <zmq.hpp>

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sandgate::gateway {

// What became of a message given to zmq_channel::send.
enum class send_result {
  sent,     // ZeroMQ has it
  queued,   // ZeroMQ's pipe is full: it waits in the channel's queue, in order
  refused,  // the channel's queue is full too (or the channel is closed): not sent
};

// The channel's own queue, behind ZeroMQ's pipe.
struct send_queue_limits {
  std::size_t messages = 1024;
  std::size_t bytes = 128 * 1024 * 1024;
};

class zmq_channel : public std::enable_shared_from_this<zmq_channel> {
 public:
  using frames = std::vector<std::string>;
  using handler = std::function<void(frames&&)>;
  // A message over the size limit, not copied: its parts as ZeroMQ holds
  // them, valid for the call, and its size.
  using oversized_handler = std::function<void(std::vector<zmq::message_t>& parts, std::size_t bytes)>;

  // Connects a socket of `type` to `endpoint`; `on_message` runs on the io_context.
  static std::shared_ptr<zmq_channel> connect(boost::asio::io_context& io, zmq::context_t& ctx,
                                              zmq::socket_type type, const std::string& endpoint,
                                              handler on_message, const std::string& routing_id = {},
                                              int receive_limit = 0);
  zmq_channel(boost::asio::io_context& io, zmq::context_t& ctx, zmq::socket_type type, handler on_message);
  ~zmq_channel();
  zmq_channel(const zmq_channel&) = delete;
  zmq_channel& operator=(const zmq_channel&) = delete;

  // Sends frames without blocking, or queues them behind ZeroMQ's full pipe.
  send_result send(frames f);
  // Whether messages wait in the channel's queue.
  [[nodiscard]] bool congested() const noexcept { return !queue_.empty(); }
  // Runs (on the io_context) each time the channel's queue has gone out.
  void on_drained(std::function<void()> callback) { on_drained_ = std::move(callback); }
  void set_queue_limits(send_queue_limits limits) { queue_limits_ = limits; }
  // Messages over `bytes` (all parts together) go to `on_oversized`
  // instead of being copied for the message handler.
  void set_message_limit(std::size_t bytes, oversized_handler on_oversized) {
    message_limit_ = bytes;
    on_oversized_ = std::move(on_oversized);
  }

  // Stops reading: what the peer sends meanwhile waits in ZeroMQ's pipe, up
  // to the socket's receive limit, and then in the peer. resume() reads on.
  void pause();
  void resume();

  // Stops watching and closes the socket; no handler runs after this.
  void close();

 private:
  void start_wait();
  void drain();
  enum class received { message, nothing, failed };
  received receive_one();
  void post_drain();                             // at most one drain queued at a time
  [[nodiscard]] bool try_send(const frames& f);  // false: ZeroMQ's pipe is full
  void send_queued();                            // as much of the queue as ZeroMQ takes

  zmq::socket_t socket_;
  boost::asio::posix::stream_descriptor fd_;
  handler on_message_;
  bool closed_ = false;
  bool waiting_ = false;
  bool drain_posted_ = false;
  bool paused_ = false;
  std::deque<frames> queue_;  // waiting for room in ZeroMQ's pipe
  std::size_t queued_bytes_ = 0;
  send_queue_limits queue_limits_;
  std::function<void()> on_drained_;
  std::size_t message_limit_ = 0;  // 0: none
  oversized_handler on_oversized_;
};

}  // namespace sandgate::gateway
