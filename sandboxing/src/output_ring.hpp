// The most recent bytes of one output stream of a process, by absolute
// offset: of everything the process wrote (`end()` bytes), the ring holds
// [begin(), end()), at most `capacity` bytes; [0, begin()) is no longer
// held. Memory grows with what is held, up to the capacity. Pure, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace sandgate::sandboxing {

class output_ring {
 public:
  explicit output_ring(std::size_t capacity) : capacity_(capacity) {}

  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] std::uint64_t begin() const noexcept { return end_ - size_; }
  [[nodiscard]] std::uint64_t end() const noexcept { return end_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

  // Appends `bytes`, dropping the oldest held bytes to make room (all of
  // them, and the front of `bytes` itself, when it is larger than the capacity).
  void append(std::string_view bytes);
  // Drops held bytes below `offset` (clamped to what is held).
  void drop_until(std::uint64_t offset);
  // The held bytes from `offset` (clamped to [begin, end]) on, in order, as
  // at most two contiguous pieces.
  [[nodiscard]] std::pair<std::string_view, std::string_view> from(std::uint64_t offset) const;

 private:
  void grow(std::size_t wanted);

  std::size_t capacity_;
  std::vector<char> data_;  // allocated size <= capacity_, a circle once full
  std::size_t head_ = 0;    // index of begin() in data_
  std::size_t size_ = 0;
  std::uint64_t end_ = 0;
};

}  // namespace sandgate::sandboxing
