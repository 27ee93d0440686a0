#include "outgoing.hpp"

namespace sandgate::gateway {

std::shared_ptr<const encoded_frame> outgoing::legacy() {
  if (!legacy_) {
    auto frame = protocol::encode_legacy(channel_, msg_);
    charge_.add(frame.data.size());
    legacy_ = std::make_shared<const encoded_frame>(encoded_frame{std::move(frame.data), {}, frame.binary});
  }
  return legacy_;
}

std::shared_ptr<const encoded_frame> outgoing::v1() {
  if (!v1_) {
    // The content and buffers (most of a large message) are not copied.
    encoded_frame frame{protocol::encode_v1_head(channel_, msg_), {msg_.content}, true};
    charge_.add(frame.data.size());
    for (const auto& b : msg_.buffers)
      frame.tail.emplace_back(b);
    v1_ = std::make_shared<const encoded_frame>(std::move(frame));
  }
  return v1_;
}

std::size_t outgoing::size_bytes() const noexcept {
  std::size_t n = msg_.header.size() + msg_.parent_header.size() + msg_.metadata.size() + msg_.content.size();
  for (const auto& b : msg_.buffers)
    n += b.size();
  return n;
}

}  // namespace sandgate::gateway
