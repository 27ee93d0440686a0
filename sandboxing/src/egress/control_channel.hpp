// The gateway's channel to sandgate-egress: an inherited unix stream socket
// carrying u32 big-endian length + JSON frames both ways (the framing of the
// sandbox control protocol). The gateway sends
//   {"op":"set","sandbox_id":..,"principal":..,"policy":{..},"listener":true}
//   {"op":"remove","sandbox_id":..}
// "listener": true when the frame's first byte carries a descriptor
// (SCM_RIGHTS): the sandbox's socket on 127.0.0.1:3128 in its own network
// namespace, which the proxy accepts on from then on (see the supervisor's
// egress_port.hpp); false: the policy changes, the socket stays. The gateway
// gets {"event":"set","sandbox_id":..,"error":""} for each set, and
// {"event":"connection",...} for every connection that ended or was refused.
// The proxy exits when the gateway's end closes.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <nlohmann/json.hpp>

#include <array>
#include <deque>
#include <functional>
#include <string>

#include "sandboxing/control_protocol.hpp"
#include "sandboxing/unique_fd.hpp"

namespace sandgate::egress {

class control_channel {
 public:
  using message_handler = std::function<void(const nlohmann::json&)>;
  using close_handler = std::function<void()>;

  control_channel(boost::asio::io_context& io, int fd, message_handler on_message, close_handler on_close);

  void start();
  // Queues one frame; frames past 64 MiB waiting are dropped (the gateway is stuck).
  void send(const nlohmann::json& message);
  // The oldest descriptor received and not yet taken: a message that says it
  // carries one takes it (its descriptor comes no later than its first byte).
  [[nodiscard]] sandboxing::unique_fd take_descriptor();

 private:
  void do_read();
  // Reads what is there with recvmsg, keeping descriptors that come with it;
  // false when the gateway's end closed or broke.
  bool read_available();
  void do_write();

  boost::asio::local::stream_protocol::socket socket_;
  message_handler on_message_;
  close_handler on_close_;
  std::array<char, 64 * 1024> buf_{};
  sandboxing::control::frame_decoder decoder_;
  std::deque<sandboxing::unique_fd> descriptors_;
  std::deque<std::string> queue_;
  std::size_t queued_bytes_ = 0;
  bool writing_ = false;
};

}  // namespace sandgate::egress
