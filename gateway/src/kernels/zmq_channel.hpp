#pragma once
// One ZeroMQ socket driven by the gateway's io_context: its ZMQ_FD is
// watched with an Asio descriptor, and every readable message is handed to
// a callback as frames. Sends never block; a full pipe is reported.

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <zmq.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sandgate::gateway {

class zmq_channel : public std::enable_shared_from_this<zmq_channel> {
 public:
  using frames = std::vector<std::string>;
  using handler = std::function<void(frames&&)>;

  // Connects a socket of `type` to `endpoint`; `on_message` runs on the io_context.
  static std::shared_ptr<zmq_channel> connect(boost::asio::io_context& io, zmq::context_t& ctx,
                                              zmq::socket_type type, const std::string& endpoint,
                                              handler on_message, const std::string& routing_id = {},
                                              int receive_limit = 0);
  zmq_channel(boost::asio::io_context& io, zmq::context_t& ctx, zmq::socket_type type, handler on_message);
  ~zmq_channel();
  zmq_channel(const zmq_channel&) = delete;
  zmq_channel& operator=(const zmq_channel&) = delete;

  // Queues frames for sending without blocking. False when the pipe is full.
  bool send(const frames& f);

  // Stops reading: what the peer sends meanwhile waits in ZeroMQ's pipe, up
  // to the socket's receive limit, and then in the peer. resume() reads on.
  void pause();
  void resume();

  // Stops watching and closes the socket; no handler runs after this.
  void close();

 private:
  void start_wait();
  void drain();
  void post_drain();  // at most one drain queued at a time

  zmq::socket_t socket_;
  boost::asio::posix::stream_descriptor fd_;
  handler on_message_;
  bool closed_ = false;
  bool waiting_ = false;
  bool drain_posted_ = false;
  bool paused_ = false;
};

}  // namespace sandgate::gateway
