// A token bucket shared by all of one sandbox's proxied connections: bytes
// in both directions draw from it at `bytes_per_second`, with a burst of a
// tenth of a second (at least 64 KiB).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace sandgate::egress {

class rate_limiter {
 public:
  using clock = std::chrono::steady_clock;

  explicit rate_limiter(std::uint64_t bytes_per_second) { set_rate(bytes_per_second); }

  void set_rate(std::uint64_t bytes_per_second) {
    rate_ = static_cast<double>(std::max<std::uint64_t>(bytes_per_second, 1));
    burst_ = std::max(rate_ / 10, 64.0 * 1024);
    tokens_ = std::min(tokens_, burst_);
  }

  // Bytes that may move now without waiting (none while the bucket is in debt).
  std::uint64_t available() {
    refill();
    return tokens_ > 0 ? static_cast<std::uint64_t>(tokens_) : 0;
  }

  // Takes `bytes` (already moved) from the bucket; returns how long the
  // caller should wait before moving more (zero while the bucket has tokens).
  clock::duration take(std::size_t bytes) {
    refill();
    tokens_ -= static_cast<double>(bytes);
    if (tokens_ >= 0) return clock::duration::zero();
    return std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(-tokens_ / rate_));
  }

 private:
  void refill() {
    const auto now = clock::now();
    tokens_ = std::min(burst_, tokens_ + std::chrono::duration<double>(now - last_).count() * rate_);
    last_ = now;
  }

  double rate_ = 1;
  double burst_ = 64.0 * 1024;
  double tokens_ = 64.0 * 1024;
  clock::time_point last_ = clock::now();
};

}  // namespace sandgate::egress
