// One gateway connection to the supervisor: non-blocking reads into a frame
// decoder, and a bounded send buffer flushed as the socket allows.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include <nlohmann/json.hpp>

#include "sandboxing/control_protocol.hpp"
#include "sandboxing/unique_fd.hpp"

namespace sandgate::sandboxing {

class control_connection {
 public:
  static constexpr std::size_t max_pending_bytes = 8u << 20;

  explicit control_connection(unique_fd fd) : fd_(std::move(fd)) {}

  int fd() const noexcept { return fd_.get(); }
  // Reads what is available; false when the peer closed or the stream broke.
  bool read_some();
  // The next whole request, if any; sets broken() on a framing error.
  std::optional<nlohmann::json> next_message();
  // Queues a message and tries to send it; a peer that lets more than
  // max_pending_bytes pile up is considered broken.
  void send(const nlohmann::json& message);
  // The same for an output event, framed straight into the send buffer.
  void send_output(std::string_view id, control::output_stream stream, std::string_view data);
  // Sends what the socket accepts now; false on error.
  bool flush();
  // Blocks (up to timeout_ms) until everything queued is sent.
  void drain(int timeout_ms);
  bool wants_write() const noexcept { return pending_bytes() > 0; }
  // Bytes queued but not yet accepted by the socket.
  std::size_t pending_bytes() const noexcept { return pending_.size() - sent_; }
  bool broken() const noexcept { return broken_; }

 private:
  void after_queue();

  unique_fd fd_;
  control::frame_decoder decoder_;
  std::string pending_;
  std::size_t sent_ = 0;  // bytes of pending_ already sent
  bool broken_ = false;
};

}  // namespace sandgate::sandboxing
