#include "output_ring.hpp"

#include <algorithm>
#include <cstring>

namespace sandgate::sandboxing {

void output_ring::grow(std::size_t wanted) {
  if (wanted <= data_.size()) return;
  const std::size_t next = std::min(capacity_, std::max({wanted, data_.size() * 2, std::size_t{4096}}));
  std::vector<char> bigger(next);
  const auto [first, second] = from(begin());
  // std::copy, not memcpy: an empty ring's spans have no data pointer.
  const auto tail = std::copy(first.begin(), first.end(), bigger.begin());
  std::copy(second.begin(), second.end(), tail);
  data_ = std::move(bigger);
  head_ = 0;
}

void output_ring::append(std::string_view bytes) {
  if (bytes.empty()) return;
  if (capacity_ == 0) {
    end_ += bytes.size();
    return;
  }
  if (bytes.size() >= capacity_) {  // only its tail can be held
    end_ += bytes.size() - capacity_;
    size_ = 0;
    head_ = 0;
    bytes = bytes.substr(bytes.size() - capacity_);
  }
  if (size_ + bytes.size() > capacity_) drop_until(begin() + (size_ + bytes.size() - capacity_));
  grow(size_ + bytes.size());
  std::size_t at = (head_ + size_) % data_.size();
  while (!bytes.empty()) {
    const std::size_t n = std::min(bytes.size(), data_.size() - at);
    std::memcpy(data_.data() + at, bytes.data(), n);
    bytes.remove_prefix(n);
    size_ += n;
    end_ += n;
    at = (at + n) % data_.size();
  }
}

void output_ring::drop_until(std::uint64_t offset) {
  if (offset <= begin()) return;
  const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(offset - begin(), size_));
  head_ = data_.empty() ? 0 : (head_ + n) % data_.size();
  size_ -= n;
  if (size_ == 0) head_ = 0;
}

std::pair<std::string_view, std::string_view> output_ring::from(std::uint64_t offset) const {
  offset = std::clamp(offset, begin(), end_);
  const auto skip = static_cast<std::size_t>(offset - begin());
  const std::size_t n = size_ - skip;
  if (n == 0) return {};
  const std::size_t start = (head_ + skip) % data_.size();
  const std::size_t first = std::min(n, data_.size() - start);
  return {std::string_view(data_.data() + start, first), std::string_view(data_.data(), n - first)};
}

}  // namespace sandgate::sandboxing
