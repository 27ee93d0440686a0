#include "sandboxing/process_stream.hpp"

namespace sandgate::sandboxing::process_stream {

void append_frame(std::string& out, frame_kind kind, std::string_view payload) {
  const auto n = static_cast<std::uint32_t>(payload.size());
  const char header[frame_header_bytes] = {static_cast<char>(kind), static_cast<char>(n >> 24),
                                           static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                                           static_cast<char>(n)};
  out.append(header, frame_header_bytes);
  out.append(payload);
}

void frame_decoder::feed(std::string_view bytes) {
  if (offset_ > 0 && offset_ == buffer_.size()) {
    buffer_.clear();
    offset_ = 0;
  } else if (offset_ > (256u << 10)) {
    buffer_.erase(0, offset_);
    offset_ = 0;
  }
  buffer_.append(bytes);
}

std::optional<frame> frame_decoder::next(bool& bad) {
  bad = false;
  if (buffer_.size() - offset_ < frame_header_bytes) return std::nullopt;
  const auto* p = reinterpret_cast<const unsigned char*>(buffer_.data() + offset_);
  if (p[0] > static_cast<unsigned char>(frame_kind::control)) {
    bad = true;
    return std::nullopt;
  }
  const std::uint32_t n =
      (std::uint32_t{p[1]} << 24) | (std::uint32_t{p[2]} << 16) | (std::uint32_t{p[3]} << 8) | p[4];
  if (n > max_attach_payload_bytes) {
    bad = true;
    return std::nullopt;
  }
  if (buffer_.size() - offset_ - frame_header_bytes < n) return std::nullopt;
  frame f{static_cast<frame_kind>(p[0]), std::string_view(buffer_).substr(offset_ + frame_header_bytes, n)};
  offset_ += frame_header_bytes + n;
  return f;
}

}  // namespace sandgate::sandboxing::process_stream
