#pragma once
// Warm pools: per kernelspec, kernels that are already sandboxed and started,
// waiting for a POST /api/kernels or /api/sandboxes to claim one. A member is
// claimed at most once (a sandbox never serves two owners); the pool refills
// in the background.
//
// Depth: at least the configured depth; more while claims come fast, enough
// to cover the claims expected during two refills (claims in the last minute
// times the time a member takes to start), up to the maximum depth and
// within the memory budget that all pools share (members are measured once
// ready). Surplus members retire one at a time once demand falls, and members
// that have waited past their time are replaced, oldest first.
//
// The pool decides; kernel_manager does (starts, measures and ends members).

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace sandgate::gateway {

class kernel;
struct sandbox_entry;

struct pool_member {
  std::string kernel_name;
  std::shared_ptr<kernel> k;
  std::shared_ptr<sandbox_entry> box;
  std::uint64_t memory_bytes = 0;  // measured once ready; 0: not known
  std::chrono::steady_clock::time_point ready_at;
};

struct pool_settings {
  std::map<std::string, unsigned> depths;  // kernelspec -> least ready members
  unsigned max_depth = 32;
  std::uint64_t memory_bytes = 0;  // every pool's members together
  unsigned max_starting = 2;       // members starting at once, all pools
  std::chrono::seconds max_wait{12 * 3600};
  // After a claim, no member starts for this long, whatever asks (the
  // claim's refill, the periodic tick, a member that became ready): a
  // claimer's first messages come right after its claim, and a start (a
  // process spawned from the gateway's thread, an interpreter starting on
  // the same CPUs) would delay them.
  std::chrono::milliseconds refill_delay{300};
};

class kernel_pool {
 public:
  // Starts a member of `kernel_name`; calls `done` with it once it is ready
  // (or nullopt when it failed). `done` may run after the pool is gone only
  // if the starter checks; kernel_manager keeps the pool as long as itself.
  using starter = std::function<void(const std::string& kernel_name,
                                     std::function<void(std::optional<pool_member>)> done)>;
  // Ends a member nobody claimed.
  using retirer = std::function<void(pool_member&)>;

  struct status {
    unsigned ready = 0;
    unsigned starting = 0;
    unsigned target = 0;
    std::uint64_t claims = 0;    // hits
    std::uint64_t misses = 0;    // asked when none was ready
    std::uint64_t failures = 0;  // members that failed to start
    std::uint64_t retired = 0;
    std::uint64_t memory_bytes = 0;  // of the ready members, as measured
  };

  kernel_pool(boost::asio::io_context& io, pool_settings settings, starter start, retirer retire);
  ~kernel_pool();

  // Begins filling; until then (and after stop()) nothing starts.
  void begin();
  // Retires every member; members still starting are retired when ready.
  void stop();

  [[nodiscard]] bool pools(const std::string& kernel_name) const { return pools_.count(kernel_name) != 0; }
  // The oldest ready member of `kernel_name`, now the caller's; nullopt (a
  // miss, which raises the demand all the same) when none is ready.
  std::optional<pool_member> claim(const std::string& kernel_name);
  // A claimed member the claimer could not use after all goes back, first in line.
  void give_back(pool_member member);
  // A member's sandbox ended by itself (expired, failed): the pool lets go
  // of it and hands it over to be ended.
  std::optional<pool_member> forget(const std::string& sandbox_id);

  [[nodiscard]] std::map<std::string, status> statuses() const;
  // Ready members of one pool, for tests and metrics.
  [[nodiscard]] unsigned ready(const std::string& kernel_name) const;

 private:
  struct pool {
    unsigned depth = 0;
    std::deque<pool_member> ready;  // oldest first
    unsigned starting = 0;
    std::deque<std::chrono::steady_clock::time_point> demand;  // claims and misses, last minute
    std::chrono::steady_clock::duration start_time{std::chrono::seconds(2)};  // moving average
    std::chrono::steady_clock::time_point retry_at;                           // after failures
    std::chrono::seconds backoff{0};
    status counts;
  };

  [[nodiscard]] unsigned target(const pool& p) const;
  [[nodiscard]] std::uint64_t member_cost(const pool& p) const;
  [[nodiscard]] std::uint64_t memory_in_use() const;
  void fill();
  // Runs fill() once the quiet time after the last claim is over.
  void fill_after_quiet();
  void start_member(const std::string& name, pool& p);
  void tick();

  boost::asio::io_context& io_;
  pool_settings settings_;
  starter start_;
  retirer retire_;
  std::map<std::string, pool> pools_;
  unsigned starting_ = 0;
  bool running_ = false;
  boost::asio::steady_timer timer_;
  boost::asio::steady_timer refill_timer_;
  bool refill_armed_ = false;
  std::chrono::steady_clock::time_point quiet_until_;  // no starts before, after a claim
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace sandgate::gateway
