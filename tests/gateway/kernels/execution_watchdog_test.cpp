#include "kernels/execution_watchdog.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <string>
#include <vector>

namespace sandgate::gateway {
namespace {

struct watched {
  boost::asio::io_context io;
  execution_log log;
  int interrupts = 0;
  std::vector<std::string> restarts;
  std::shared_ptr<execution_watchdog> dog;

  explicit watched(std::chrono::seconds max_execution, std::chrono::seconds grace = std::chrono::seconds(0)) {
    dog = std::make_shared<execution_watchdog>(
        io, log, "kernel-under-test", max_execution, grace,
        execution_watchdog::actions{[this] { ++interrupts; },
                                    [this](const std::string& id) { restarts.push_back(id); }});
  }
  void run(std::chrono::milliseconds for_how_long) {
    io.restart();
    io.run_for(for_how_long);
  }
};

TEST(execution_watchdog, a_busy_execute_past_its_timeout_is_interrupted_then_restarted) {
  watched w(std::chrono::seconds(0));
  w.log.begin("m1", {}, {}, std::chrono::milliseconds(20));
  w.dog->on_state("m1", "busy");
  w.run(std::chrono::milliseconds(10));
  EXPECT_EQ(w.interrupts, 0);
  w.run(std::chrono::milliseconds(200));
  EXPECT_EQ(w.interrupts, 1);
  EXPECT_TRUE(w.log.find("m1")->timed_out);
  EXPECT_EQ(w.restarts, std::vector<std::string>{"m1"});  // still busy after the grace
}

TEST(execution_watchdog, an_execute_that_stops_after_the_interrupt_is_not_restarted) {
  watched w(std::chrono::seconds(0), std::chrono::seconds(1));
  w.log.begin("m1", {}, {}, std::chrono::milliseconds(10));
  w.dog->on_state("m1", "busy");
  w.run(std::chrono::milliseconds(100));
  EXPECT_EQ(w.interrupts, 1);
  w.dog->on_state("m1", "idle");
  w.run(std::chrono::milliseconds(1200));
  EXPECT_TRUE(w.restarts.empty());
}

TEST(execution_watchdog, idle_in_time_and_untracked_executes_are_left_alone) {
  watched w(std::chrono::seconds(0));
  w.log.begin("m1", {}, {}, std::chrono::milliseconds(50));
  w.dog->on_state("m1", "busy");
  w.dog->on_state("m1", "idle");
  w.dog->on_state("unknown", "busy");
  w.run(std::chrono::milliseconds(150));
  EXPECT_EQ(w.interrupts, 0);
  EXPECT_TRUE(w.restarts.empty());
}

TEST(execution_watchdog, without_a_limit_of_either_kind_nothing_fires) {
  watched w(std::chrono::seconds(0));
  w.log.begin("m1");
  w.dog->on_state("m1", "busy");
  w.run(std::chrono::milliseconds(100));
  EXPECT_EQ(w.interrupts, 0);
}

TEST(execution_watchdog, reset_forgets_the_running_execute) {
  watched w(std::chrono::seconds(0));
  w.log.begin("m1", {}, {}, std::chrono::milliseconds(20));
  w.dog->on_state("m1", "busy");
  w.dog->reset();
  w.run(std::chrono::milliseconds(100));
  EXPECT_EQ(w.interrupts, 0);
}

}  // namespace
}  // namespace sandgate::gateway
