#include "rate_limiter.hpp"

#include <gtest/gtest.h>

namespace eg = sandgate::egress;
using namespace std::chrono_literals;

TEST(rate_limiter, lets_a_burst_through_then_asks_to_wait) {
  eg::rate_limiter limiter(1 << 20);  // 1 MiB/s: a burst of 104857 bytes
  EXPECT_EQ(limiter.take(64 * 1024), eg::rate_limiter::clock::duration::zero());
  const auto wait = limiter.take(1 << 20);  // far past the bucket
  EXPECT_GT(wait, 850ms);
  EXPECT_LT(wait, 1050ms);
}

TEST(rate_limiter, a_lower_rate_applies_at_once) {
  eg::rate_limiter limiter(1ull << 30);
  limiter.set_rate(64 * 1024);
  EXPECT_EQ(limiter.take(64 * 1024), eg::rate_limiter::clock::duration::zero());
  EXPECT_GT(limiter.take(64 * 1024), 900ms);
}

TEST(rate_limiter, available_is_what_may_move_now) {
  eg::rate_limiter limiter(1 << 20);  // 1 MiB/s, a burst of 104857 bytes
  const auto first = limiter.available();
  EXPECT_GE(first, 64u * 1024);
  EXPECT_LE(first, 104857u);
  (void)limiter.take(first + 50000);
  EXPECT_EQ(limiter.available(), 0u);  // in debt: wait first
}
