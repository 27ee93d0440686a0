#pragma once
// A kernel message on its way to WebSocket clients. It is encoded at most
// once per WebSocket protocol, and the encoded bytes are shared by every
// client that receives it (serialize once, post to each).

#include "output_budget.hpp"

#include <jupyter_protocol/message.hpp>
#include <jupyter_protocol/websocket.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::gateway {

// A WebSocket message: `data`, then `tail`, parts of the outgoing's message
// sent from where they are (valid while the outgoing lives).
struct encoded_frame {
  std::string data;
  std::vector<std::string_view> tail;
  bool binary = false;

  [[nodiscard]] std::size_t size() const noexcept {
    std::size_t n = data.size();
    for (const auto part : tail)
      n += part.size();
    return n;
  }
};

class outgoing {
 public:
  outgoing(protocol::channel ch, protocol::message msg) : channel_(ch), msg_(std::move(msg)) {}

  [[nodiscard]] protocol::channel channel() const noexcept { return channel_; }
  [[nodiscard]] const protocol::message& message() const noexcept { return msg_; }

  [[nodiscard]] std::shared_ptr<const encoded_frame> legacy();
  [[nodiscard]] std::shared_ptr<const encoded_frame> v1();

  // Bytes of the message's parts, for queue and buffer accounting.
  [[nodiscard]] std::size_t size_bytes() const noexcept;
  // Counts the message, and each encoding of it, against its kernel's part
  // of the output budget for as long as it lives.
  void charge_to(std::shared_ptr<output_account> account) {
    charge_ = output_charge(std::move(account), size_bytes());
  }

 private:
  protocol::channel channel_;
  protocol::message msg_;
  output_charge charge_;
  std::shared_ptr<const encoded_frame> legacy_;
  std::shared_ptr<const encoded_frame> v1_;
};

// A WebSocket connection as a kernel sees it.
class kernel_client {
 public:
  virtual ~kernel_client() = default;
  [[nodiscard]] virtual const std::string& session_id() const noexcept = 0;
  // Who connected (the authenticated principal's name).
  [[nodiscard]] virtual const std::string& principal() const noexcept = 0;
  virtual void deliver(const std::shared_ptr<outgoing>& out) = 0;
  virtual void close(unsigned short code, std::string reason) = 0;
  // The kernel takes input again: a client that stopped reading because
  // kernel::from_client said so reads on.
  virtual void resume_input() {}
};

}  // namespace sandgate::gateway
