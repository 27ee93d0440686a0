// A cursor over bytes in network order (DNS messages, TLS records): every
// read is checked against the end, and a read that does not fit moves nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sandgate::egress {

class byte_reader {
 public:
  explicit byte_reader(std::string_view bytes) : bytes_(bytes) {}

  [[nodiscard]] std::size_t left() const noexcept { return bytes_.size() - pos_; }
  [[nodiscard]] std::size_t pos() const noexcept { return pos_; }

  // A big-endian unsigned number of `width` bytes (1 to 4).
  std::optional<std::uint32_t> number(std::size_t width) {
    if (left() < width) return std::nullopt;
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < width; ++i)
      v = (v << 8) | byte(pos_ + i);
    pos_ += width;
    return v;
  }
  std::optional<std::string_view> bytes(std::size_t n) {
    if (left() < n) return std::nullopt;
    const auto out = bytes_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  // A length of `width` bytes, then that many bytes.
  std::optional<std::string_view> vector(std::size_t width) {
    const auto n = number(width);
    return n ? bytes(*n) : std::nullopt;
  }

 protected:
  [[nodiscard]] unsigned byte(std::size_t i) const { return static_cast<unsigned char>(bytes_[i]); }

  std::string_view bytes_;
  std::size_t pos_ = 0;
};

}  // namespace sandgate::egress
