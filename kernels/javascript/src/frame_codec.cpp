#include "frame_codec.hpp"

#include <stdexcept>

namespace sandgate::javascript_kernel {

std::string encode_frame(std::string_view payload) {
  if (payload.size() > max_frame_bytes) {
    throw std::length_error("frame of " + std::to_string(payload.size()) + " bytes");
  }
  const auto length = static_cast<std::uint32_t>(payload.size());
  std::string frame;
  frame.reserve(4 + payload.size());
  for (int shift = 0; shift < 32; shift += 8) {
    frame.push_back(static_cast<char>((length >> shift) & 0xffU));
  }
  frame.append(payload);
  return frame;
}

void frame_decoder::feed(std::string_view bytes) {
  if (failed_) {
    return;
  }
  if (read_ > 0 && read_ >= buffer_.size() / 2) {
    buffer_.erase(0, read_);  // keep the buffer from growing with what was decoded
    read_ = 0;
  }
  buffer_.append(bytes);
}

std::optional<std::string> frame_decoder::next() {
  if (failed_ || pending_bytes() < 4) {
    return std::nullopt;
  }
  std::uint32_t length = 0;
  for (int i = 3; i >= 0; --i) {
    length = (length << 8) | static_cast<unsigned char>(buffer_[read_ + static_cast<std::size_t>(i)]);
  }
  if (length > max_frame_bytes) {
    failed_ = true;
    buffer_.clear();
    read_ = 0;
    return std::nullopt;
  }
  if (pending_bytes() - 4 < length) {
    return std::nullopt;
  }
  std::string payload = buffer_.substr(read_ + 4, length);
  read_ += 4 + length;
  if (read_ == buffer_.size()) {
    buffer_.clear();
    read_ = 0;
  }
  return payload;
}

}  // namespace sandgate::javascript_kernel
