// connection_table: the counts per address and overall, refusals over the
// per-address limit, a new connection over the total taking the place of
// the one that has waited longest for a head (never a busy one), slots that
// move and outlive the table.

#include "http/connection_table.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace sandgate::gateway {
namespace {

namespace ip = boost::asio::ip;
using refusal = connection_table::refusal;

ip::address addr(const std::string& text) {
  return ip::make_address(text);
}

// A connection the table may tell to close: it records that it was told.
struct recording_closer final : connection_table::closer {
  int closed = 0;
  void close_now() override { ++closed; }
};

TEST(connection_table, counts_per_address_and_overall) {
  connection_table table({.total = 10, .per_address = 3});
  auto a1 = table.admit(addr("127.0.0.2"));
  auto a2 = table.admit(addr("127.0.0.2"));
  auto b1 = table.admit(addr("127.0.0.3"));
  EXPECT_EQ(a1.refused, refusal::none);
  EXPECT_TRUE(a1.place.held());
  EXPECT_EQ(table.open(), 3u);
  EXPECT_EQ(table.open_from(addr("127.0.0.2")), 2u);
  EXPECT_EQ(table.open_from(addr("127.0.0.3")), 1u);
  EXPECT_EQ(table.open_from(addr("127.0.0.4")), 0u);
  a1.place.release();
  EXPECT_FALSE(a1.place.held());
  EXPECT_EQ(table.open(), 2u);
  EXPECT_EQ(table.open_from(addr("127.0.0.2")), 1u);
  a1.place.release();  // twice is once
  EXPECT_EQ(table.open(), 2u);
}

TEST(connection_table, over_the_per_address_limit_is_refused_other_addresses_are_not) {
  connection_table table({.total = 100, .per_address = 2});
  std::vector<connection_table::slot> held;
  held.reserve(2);
  for (int i = 0; i < 2; ++i)
    held.push_back(table.admit(addr("10.0.0.1")).place);
  const auto third = table.admit(addr("10.0.0.1"));
  EXPECT_EQ(third.refused, refusal::per_address);
  EXPECT_FALSE(third.place.held());
  EXPECT_EQ(table.open(), 2u);
  EXPECT_EQ(table.admit(addr("10.0.0.2")).refused, refusal::none);  // released at once: not kept
  held.pop_back();
  auto again = table.admit(addr("10.0.0.1"));
  EXPECT_EQ(again.refused, refusal::none);
}

TEST(connection_table, loopback_addresses_count_each_on_their_own) {
  connection_table table({.total = 100, .per_address = 1});
  auto a = table.admit(addr("127.0.0.1"));
  auto b = table.admit(addr("127.0.0.2"));
  EXPECT_EQ(b.refused, refusal::none);
  EXPECT_EQ(table.admit(addr("127.0.0.1")).refused, refusal::per_address);
}

TEST(connection_table, no_per_address_limit_when_zero) {
  connection_table table({.total = 5, .per_address = 0});
  std::vector<connection_table::slot> held;
  held.reserve(5);
  for (int i = 0; i < 5; ++i) {
    auto a = table.admit(addr("192.0.2.1"));
    ASSERT_EQ(a.refused, refusal::none) << i;
    held.push_back(std::move(a.place));
  }
  EXPECT_EQ(table.admit(addr("192.0.2.1")).refused, refusal::total);  // none waits to make room
}

TEST(connection_table, ipv6_counts_by_its_64_bit_prefix_and_mapped_ipv4_as_ipv4) {
  EXPECT_EQ(connection_table::address_key(addr("2001:db8:1:2:aaaa::1")), addr("2001:db8:1:2::"));
  EXPECT_EQ(connection_table::address_key(addr("::ffff:192.0.2.7")), addr("192.0.2.7"));
  EXPECT_EQ(connection_table::address_key(addr("192.0.2.7")), addr("192.0.2.7"));
  connection_table table({.total = 100, .per_address = 2});
  auto a = table.admit(addr("2001:db8:1:2::1"));
  auto b = table.admit(addr("2001:db8:1:2:ffff:ffff:ffff:ffff"));
  EXPECT_EQ(table.admit(addr("2001:db8:1:2::99")).refused, refusal::per_address);
  EXPECT_EQ(table.admit(addr("2001:db8:1:3::1")).refused, refusal::none);
  auto c = table.admit(addr("::ffff:192.0.2.7"));
  auto d = table.admit(addr("192.0.2.7"));
  EXPECT_EQ(table.open_from(addr("192.0.2.7")), 2u);
  EXPECT_EQ(table.admit(addr("::ffff:192.0.2.7")).refused, refusal::per_address);
}

TEST(connection_table, at_the_total_the_longest_waiting_makes_room) {
  connection_table table({.total = 3, .per_address = 0});
  recording_closer first, second, third;
  auto a = table.admit(addr("127.0.0.2"));
  auto b = table.admit(addr("127.0.0.3"));
  auto c = table.admit(addr("127.0.0.4"));
  b.place.waiting(second);
  a.place.waiting(first);
  c.place.waiting(third);
  EXPECT_EQ(table.waiting(), 3u);
  auto d = table.admit(addr("127.0.0.5"));
  EXPECT_EQ(d.refused, refusal::none);
  EXPECT_TRUE(d.displaced_waiting);
  EXPECT_EQ(second.closed, 1);  // it began to wait first
  EXPECT_EQ(first.closed + third.closed, 0);
  EXPECT_FALSE(b.place.held());
  EXPECT_EQ(table.open(), 3u);
  EXPECT_EQ(table.open_from(addr("127.0.0.3")), 0u);
  b.place.release();  // what the displaced session's end does: nothing more
  EXPECT_EQ(table.open(), 3u);
}

TEST(connection_table, waiting_again_goes_to_the_back_and_busy_ones_stay) {
  connection_table table({.total = 3, .per_address = 0});
  recording_closer ca, cb, cc;
  auto a = table.admit(addr("127.0.0.2"));
  auto b = table.admit(addr("127.0.0.3"));
  auto c = table.admit(addr("127.0.0.4"));
  a.place.waiting(ca);
  b.place.waiting(cb);
  c.place.waiting(cc);
  a.place.busy();       // a request came in
  a.place.waiting(ca);  // and was answered: the connection waits again, last
  b.place.busy();
  EXPECT_EQ(table.waiting(), 2u);
  auto d = table.admit(addr("127.0.0.5"));
  EXPECT_EQ(cc.closed, 1);
  EXPECT_EQ(ca.closed + cb.closed, 0);
  auto e = table.admit(addr("127.0.0.6"));
  EXPECT_EQ(ca.closed, 1);
  EXPECT_EQ(cb.closed, 0);
  // Only busy ones left (b, d and e were never told to wait): refused.
  const auto f = table.admit(addr("127.0.0.7"));
  EXPECT_EQ(f.refused, refusal::total);
  EXPECT_FALSE(f.displaced_waiting);
  EXPECT_EQ(cb.closed, 0);
  EXPECT_EQ(table.open(), 3u);
}

TEST(connection_table, a_slot_that_moves_keeps_its_place) {
  connection_table table({.total = 2, .per_address = 0});
  recording_closer closer;
  connection_table::slot moved;
  {
    auto a = table.admit(addr("127.0.0.2"));
    moved = std::move(a.place);
    EXPECT_FALSE(a.place.held());  // NOLINT(bugprone-use-after-move): a moved-from slot is empty
  }
  EXPECT_TRUE(moved.held());
  EXPECT_EQ(table.open(), 1u);
  moved.waiting(closer);
  connection_table::slot second(std::move(moved));
  auto b = table.admit(addr("127.0.0.3"));
  auto c = table.admit(addr("127.0.0.4"));  // displaces the moved one
  EXPECT_EQ(closer.closed, 1);
  EXPECT_FALSE(second.held());
  EXPECT_EQ(table.open(), 2u);
}

TEST(connection_table, reports_each_change_of_the_count) {
  std::vector<std::pair<std::size_t, bool>> seen;
  connection_table table({.total = 1, .per_address = 0},
                         [&seen](std::size_t open, bool opened) { seen.emplace_back(open, opened); });
  recording_closer closer;
  {
    auto a = table.admit(addr("127.0.0.2"));
    a.place.waiting(closer);
    auto b = table.admit(addr("127.0.0.3"));
  }
  const std::vector<std::pair<std::size_t, bool>> expected = {{1, true}, {0, false}, {1, true}, {0, false}};
  EXPECT_EQ(seen, expected);
}

TEST(connection_table, slots_may_outlive_the_table) {
  std::size_t calls = 0;
  connection_table::slot kept;
  {
    connection_table table({.total = 4, .per_address = 0}, [&calls](std::size_t, bool) { ++calls; });
    kept = table.admit(addr("127.0.0.2")).place;
  }
  EXPECT_EQ(calls, 1u);
  kept.release();  // no call into what the table was given
  EXPECT_EQ(calls, 1u);
}

}  // namespace
}  // namespace sandgate::gateway
