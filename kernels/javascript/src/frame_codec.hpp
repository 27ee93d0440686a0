// Frames between sandgate-javascript and its Node driver: a 4-byte
// little-endian length, then that many bytes (UTF-8 JSON).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sandgate::javascript_kernel {

// The largest frame either side accepts: a cell's source, one display, one
// result, one write to stdout.
inline constexpr std::size_t max_frame_bytes = 256 * 1024 * 1024;

// The frame holding payload; payload must be at most max_frame_bytes.
std::string encode_frame(std::string_view payload);

// Cuts a byte stream, arriving in pieces of any size, into frame payloads.
class frame_decoder {
 public:
  // Adds bytes read from the stream.
  void feed(std::string_view bytes);

  // The next whole payload, or nothing until more bytes arrive (or after a
  // frame longer than max_frame_bytes was announced: see failed()).
  std::optional<std::string> next();

  // True once a length over max_frame_bytes arrived: the stream cannot be
  // trusted after it, and nothing more is decoded.
  bool failed() const noexcept { return failed_; }

  // Bytes held that do not yet make a whole frame.
  std::size_t pending_bytes() const noexcept { return buffer_.size() - read_; }

 private:
  std::string buffer_;
  std::size_t read_ = 0;  // start of the first undecoded byte in buffer_
  bool failed_ = false;
};

}  // namespace sandgate::javascript_kernel
