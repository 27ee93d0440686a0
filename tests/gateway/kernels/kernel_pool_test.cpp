// The warm pool's decisions (depth, claims, refills, the memory budget,
// retirement), with members that are plain records: the mechanics of
// starting real sandboxed kernels are tested end to end in
// tests/integration/test_pool.py.
#include "kernels/kernel_pool.hpp"

#include "sandboxes/sandbox_manager.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <functional>
#include <string>
#include <vector>

namespace sandgate::gateway {
namespace {

constexpr std::uint64_t mib = 1024 * 1024;

// Starts are held until the test completes them, so it decides when and how
// each member becomes ready.
struct pool_harness {
  boost::asio::io_context io;
  std::vector<std::function<void(std::optional<pool_member>)>> pending;
  std::vector<std::string> started, retired;
  std::vector<std::chrono::steady_clock::time_point> started_at;
  int next_id = 0;
  kernel_pool pool;

  explicit pool_harness(pool_settings settings)
      : pool(
            io, std::move(settings),
            [this](const std::string& name, std::function<void(std::optional<pool_member>)> done) {
              started.push_back(name);
              started_at.push_back(std::chrono::steady_clock::now());
              pending.push_back(std::move(done));
            },
            [this](pool_member& m) { retired.push_back(m.box->id); }) {}

  // Completes the oldest pending start, as a member of `memory` bytes or as a failure.
  void complete(std::uint64_t memory = 50 * mib, bool ok = true) {
    ASSERT_FALSE(pending.empty());
    auto done = std::move(pending.front());
    pending.erase(pending.begin());
    if (!ok) return done(std::nullopt);
    pool_member m;
    m.box = std::make_shared<sandbox_entry>();
    m.box->id = "box-" + std::to_string(++next_id);
    m.memory_bytes = memory;
    done(std::move(m));
  }
  // Runs what is due now (the refill after a claim, with no delay).
  void run() {
    io.restart();
    io.run_for(std::chrono::milliseconds(20));
  }
};

pool_settings settings(unsigned depth, unsigned max_depth = 8, std::uint64_t budget = 1024 * mib) {
  pool_settings s;
  s.depths = {{"python", depth}};
  s.max_depth = max_depth;
  s.memory_bytes = budget;
  s.max_starting = 2;
  s.refill_delay = std::chrono::milliseconds(0);
  return s;
}

TEST(kernel_pool, fills_to_its_depth_a_few_starts_at_a_time) {
  pool_harness h(settings(3));
  EXPECT_TRUE(h.started.empty()) << "nothing starts before begin()";
  h.pool.begin();
  EXPECT_EQ(h.started.size(), 2u) << "at most max_starting at once";
  h.complete();
  EXPECT_EQ(h.started.size(), 3u) << "a finished start makes room for the next";
  h.complete();
  h.complete();
  EXPECT_EQ(h.pool.ready("python"), 3u);
  EXPECT_EQ(h.started.size(), 3u) << "no more than the depth while nobody claims";
  const auto st = h.pool.statuses().at("python");
  EXPECT_EQ(st.ready, 3u);
  EXPECT_EQ(st.memory_bytes, 150 * mib);
  h.pool.stop();
}

TEST(kernel_pool, a_claim_takes_a_member_once_and_the_pool_refills) {
  pool_harness h(settings(1));
  h.pool.begin();
  h.complete();
  auto first = h.pool.claim("python");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->box->id, "box-1");
  EXPECT_EQ(first->kernel_name, "python");
  EXPECT_EQ(h.pool.ready("python"), 0u);
  EXPECT_FALSE(h.pool.claim("python")) << "the same member is never handed out twice";
  EXPECT_FALSE(h.pool.claim("bash")) << "no pool for that kernelspec";
  h.run();  // the refill is posted after the claim
  ASSERT_EQ(h.started.size(), 2u);
  h.complete();
  auto second = h.pool.claim("python");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->box->id, "box-2");
  const auto st = h.pool.statuses().at("python");
  EXPECT_EQ(st.claims, 2u);
  EXPECT_EQ(st.misses, 1u);
  h.pool.stop();
}

TEST(kernel_pool, nothing_starts_during_the_quiet_time_after_a_claim) {
  auto s = settings(2);
  s.refill_delay = std::chrono::milliseconds(500);
  pool_harness h(std::move(s));
  h.pool.begin();
  ASSERT_EQ(h.started.size(), 2u);
  h.complete();
  const auto claimed_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(h.pool.claim("python"));
  h.complete();  // a member that becomes ready asks for a fill
  h.run();
  EXPECT_EQ(h.pool.ready("python"), 1u);
  EXPECT_EQ(h.started.size(), 2u)
      << "a start right after a claim would compete with the claimer's first cell";
  h.io.restart();
  h.io.run_for(std::chrono::milliseconds(1500));
  ASSERT_EQ(h.started.size(), 3u) << "the refill comes once the quiet time is over";
  EXPECT_GE(h.started_at.back() - claimed_at, std::chrono::milliseconds(500));
  h.pool.stop();
}

TEST(kernel_pool, depth_grows_with_the_claim_rate_up_to_the_maximum) {
  pool_harness h(settings(1, 6));
  h.pool.begin();
  h.complete();
  EXPECT_EQ(h.pool.statuses().at("python").target, 1u);
  // Many claims in the last minute: two refill times' worth of them is more
  // than the maximum (even as instant starts here bring the refill time down).
  for (int i = 0; i < 2000; ++i)
    (void)h.pool.claim("python");
  EXPECT_EQ(h.pool.statuses().at("python").target, 6u);
  h.run();
  while (!h.pending.empty())
    h.complete();
  EXPECT_EQ(h.pool.ready("python"), 6u);
  h.pool.stop();
}

TEST(kernel_pool, the_memory_budget_caps_the_depth) {
  // Room for three members of 100 MiB, whatever the configured depth.
  pool_harness h(settings(5, 8, 350 * mib));
  h.pool.begin();
  while (!h.pending.empty())
    h.complete(100 * mib);
  EXPECT_EQ(h.pool.ready("python"), 3u);
  EXPECT_EQ(h.pool.statuses().at("python").target, 3u);
  h.pool.stop();
}

TEST(kernel_pool, failures_back_off_instead_of_spinning) {
  pool_harness h(settings(1));
  h.pool.begin();
  h.complete(0, false);
  h.run();
  EXPECT_TRUE(h.pending.empty()) << "no new start right after a failure";
  EXPECT_EQ(h.pool.statuses().at("python").failures, 1u);
  h.pool.stop();
}

TEST(kernel_pool, stop_retires_ready_members_and_those_still_starting) {
  pool_harness h(settings(2));
  h.pool.begin();
  h.complete();
  h.pool.stop();
  EXPECT_EQ(h.retired, (std::vector<std::string>{"box-1"}));
  h.complete();  // finished after the stop
  EXPECT_EQ(h.retired, (std::vector<std::string>{"box-1", "box-2"}));
  EXPECT_EQ(h.pool.ready("python"), 0u);
  EXPECT_FALSE(h.pool.claim("python"));
}

TEST(kernel_pool, a_member_whose_sandbox_ended_is_forgotten_and_one_given_back_goes_first) {
  pool_harness h(settings(2));
  h.pool.begin();
  h.complete();
  h.complete();
  auto gone = h.pool.forget("box-1");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->box->id, "box-1");
  EXPECT_FALSE(h.pool.forget("box-1"));
  auto m = h.pool.claim("python");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->box->id, "box-2");
  h.pool.give_back(std::move(*m));
  EXPECT_EQ(h.pool.statuses().at("python").claims, 0u) << "a member given back was not a hit";
  auto again = h.pool.claim("python");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->box->id, "box-2");
  h.pool.stop();
}

}  // namespace
}  // namespace sandgate::gateway
