// A stream's ring: offsets, what it holds after it overflows, bytes handed
// out in two pieces across the wrap, growth up to the capacity only.
#include "output_ring.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sandgate::sandboxing {
namespace {

std::string held(const output_ring& r, std::uint64_t from) {
  const auto [a, b] = r.from(from);
  return std::string(a) + std::string(b);
}

TEST(OutputRing, HoldsWhatFitsByOffset) {
  output_ring r(8);
  r.append("abc");
  r.append("de");
  EXPECT_EQ(r.begin(), 0u);
  EXPECT_EQ(r.end(), 5u);
  EXPECT_EQ(held(r, 0), "abcde");
  EXPECT_EQ(held(r, 3), "de");
  EXPECT_EQ(held(r, 5), "");
  EXPECT_EQ(held(r, 99), "");  // past the end: nothing
}

TEST(OutputRing, AnOverflowDropsTheOldest) {
  output_ring r(8);
  r.append("0123456");
  r.append("789ab");  // 12 written, 8 held
  EXPECT_EQ(r.begin(), 4u);
  EXPECT_EQ(r.end(), 12u);
  EXPECT_EQ(held(r, 0), "456789ab");  // before begin: from begin
  EXPECT_EQ(held(r, 6), "6789ab");
  const auto [a, b] = r.from(4);
  EXPECT_FALSE(b.empty());  // it wrapped: two pieces
  EXPECT_EQ(std::string(a) + std::string(b), "456789ab");
}

TEST(OutputRing, MoreThanTheCapacityAtOnceKeepsItsTail) {
  output_ring r(4);
  r.append("xy");
  r.append("abcdefghij");
  EXPECT_EQ(r.end(), 12u);
  EXPECT_EQ(r.begin(), 8u);
  EXPECT_EQ(held(r, 0), "ghij");
}

TEST(OutputRing, DropUntilMakesRoomWithoutMovingTheEnd) {
  output_ring r(8);
  r.append("abcdefgh");
  r.drop_until(3);
  EXPECT_EQ(r.begin(), 3u);
  EXPECT_EQ(r.size(), 5u);
  r.append("ijk");
  EXPECT_EQ(held(r, 0), "defghijk");
  r.drop_until(100);  // clamped
  EXPECT_EQ(r.size(), 0u);
  EXPECT_EQ(r.begin(), 11u);
  r.append("l");
  EXPECT_EQ(held(r, 11), "l");
}

TEST(OutputRing, ManySmallWritesAcrossTheWrapStayInOrder) {
  output_ring r(1000);
  std::string all;
  for (int i = 0; i < 5000; ++i) {
    const std::string piece = std::to_string(i) + ",";
    all += piece;
    r.append(piece);
  }
  EXPECT_EQ(r.end(), all.size());
  EXPECT_EQ(held(r, 0), all.substr(all.size() - 1000));
}

TEST(OutputRing, AZeroCapacityCountsButHoldsNothing) {
  output_ring r(0);
  r.append("abc");
  EXPECT_EQ(r.end(), 3u);
  EXPECT_EQ(r.begin(), 3u);
  EXPECT_EQ(held(r, 0), "");
}

}  // namespace
}  // namespace sandgate::sandboxing
