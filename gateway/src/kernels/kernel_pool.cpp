#include "kernel_pool.hpp"

#include "../sandboxes/sandbox_manager.hpp"

#include <gateway/log.hpp>

#include <algorithm>
#include <cmath>

namespace sandgate::gateway {
namespace {

using clock = std::chrono::steady_clock;
constexpr auto demand_window = std::chrono::seconds(60);
// A member no one has measured yet is taken to cost this much.
constexpr std::uint64_t unmeasured_cost = 128ull * 1024 * 1024;
// Surplus members retire only after waiting this long (demand comes in bursts).
constexpr auto surplus_grace = std::chrono::seconds(30);
constexpr auto max_backoff = std::chrono::seconds(60);

}  // namespace

kernel_pool::kernel_pool(boost::asio::io_context& io, pool_settings settings, starter start, retirer retire)
    : io_(io),
      settings_(std::move(settings)),
      start_(std::move(start)),
      retire_(std::move(retire)),
      timer_(io),
      refill_timer_(io) {
  for (const auto& [name, depth] : settings_.depths)
    if (depth > 0) pools_[name].depth = depth;
}

kernel_pool::~kernel_pool() {
  *alive_ = false;
  timer_.cancel();
  refill_timer_.cancel();
}

void kernel_pool::begin() {
  if (pools_.empty()) return;
  running_ = true;
  log::info("pool_filling", {{"pools", std::to_string(pools_.size())},
                             {"memory_budget_bytes", std::to_string(settings_.memory_bytes)}});
  tick();
}

void kernel_pool::stop() {
  running_ = false;
  timer_.cancel();
  refill_timer_.cancel();
  for (auto& [name, p] : pools_) {
    for (auto& m : p.ready) {
      ++p.counts.retired;
      retire_(m);
    }
    p.ready.clear();
  }
}

std::optional<pool_member> kernel_pool::claim(const std::string& kernel_name) {
  auto it = pools_.find(kernel_name);
  if (it == pools_.end() || !running_) return std::nullopt;
  auto& p = it->second;
  const auto now = clock::now();
  p.demand.push_back(now);
  quiet_until_ = now + settings_.refill_delay;
  fill_after_quiet();
  if (p.ready.empty()) {
    ++p.counts.misses;
    log::info("pool_miss", {{"kernel_name", kernel_name}});
    return std::nullopt;
  }
  auto member = std::move(p.ready.front());
  p.ready.pop_front();
  ++p.counts.claims;
  return member;
}

void kernel_pool::give_back(pool_member member) {
  auto it = pools_.find(member.kernel_name);
  if (it == pools_.end()) return retire_(member);
  if (it->second.counts.claims) --it->second.counts.claims;
  it->second.ready.push_front(std::move(member));
}

std::optional<pool_member> kernel_pool::forget(const std::string& sandbox_id) {
  for (auto& [name, p] : pools_) {
    auto it = std::find_if(p.ready.begin(), p.ready.end(),
                           [&](const pool_member& m) { return m.box->id == sandbox_id; });
    if (it == p.ready.end()) continue;
    auto member = std::move(*it);
    p.ready.erase(it);
    return member;
  }
  return std::nullopt;
}

unsigned kernel_pool::ready(const std::string& kernel_name) const {
  auto it = pools_.find(kernel_name);
  return it == pools_.end() ? 0 : static_cast<unsigned>(it->second.ready.size());
}

std::uint64_t kernel_pool::member_cost(const pool& p) const {
  std::uint64_t sum = 0, measured = 0;
  for (const auto& m : p.ready)
    if (m.memory_bytes) {
      sum += m.memory_bytes;
      ++measured;
    }
  return measured ? sum / measured : unmeasured_cost;
}

std::uint64_t kernel_pool::memory_in_use() const {
  std::uint64_t total = 0;
  for (const auto& [name, p] : pools_) {
    const auto cost = member_cost(p);
    for (const auto& m : p.ready)
      total += m.memory_bytes ? m.memory_bytes : cost;
    total += p.starting * cost;
  }
  return total;
}

unsigned kernel_pool::target(const pool& p) const {
  // Enough for the claims expected while two members start, at the rate of
  // the last minute.
  const double rate =
      static_cast<double>(p.demand.size()) / std::chrono::duration<double>(demand_window).count();
  const double refill_s = std::chrono::duration<double>(p.start_time).count();
  const auto wanted = static_cast<unsigned>(std::ceil(2 * rate * refill_s));
  unsigned t = std::clamp(wanted, p.depth, std::max(p.depth, settings_.max_depth));
  // Within the budget, counting what the other pools hold.
  const auto cost = member_cost(p);
  std::uint64_t others = memory_in_use();
  for (const auto& m : p.ready)
    others -= std::min(others, m.memory_bytes ? m.memory_bytes : cost);
  others -= std::min(others, p.starting * cost);
  const auto room = settings_.memory_bytes > others ? settings_.memory_bytes - others : 0;
  return std::min<unsigned>(t, static_cast<unsigned>(std::min<std::uint64_t>(room / cost, 100000)));
}

void kernel_pool::fill_after_quiet() {
  if (refill_armed_) return;
  refill_armed_ = true;
  refill_timer_.expires_at(quiet_until_);
  refill_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    refill_armed_ = false;
    fill();
  });
}

void kernel_pool::fill() {
  if (!running_) return;
  const auto now = clock::now();
  if (now < quiet_until_) return fill_after_quiet();  // a later claim moved the quiet time on
  for (auto& [name, p] : pools_) {
    while (starting_ < settings_.max_starting && now >= p.retry_at && p.ready.size() + p.starting < target(p))
      start_member(name, p);
  }
}

void kernel_pool::start_member(const std::string& name, pool& p) {
  ++p.starting;
  ++starting_;
  const auto began = clock::now();
  start_(name, [this, alive = alive_, name, began](std::optional<pool_member> member) {
    if (!*alive) return;
    auto& q = pools_[name];
    --q.starting;
    --starting_;
    if (!member) {
      ++q.counts.failures;
      q.backoff = std::min<std::chrono::seconds>(
          max_backoff, std::max<std::chrono::seconds>(std::chrono::seconds(1), q.backoff * 2));
      q.retry_at = clock::now() + q.backoff;
      log::warn("pool_member_failed",
                {{"kernel_name", name}, {"retry_in_s", std::to_string(q.backoff.count())}});
      return;
    }
    q.backoff = std::chrono::seconds(0);
    const auto took = clock::now() - began;
    q.start_time = (q.start_time * 3 + took) / 4;
    if (!running_) {
      ++q.counts.retired;
      retire_(*member);
      return;
    }
    member->kernel_name = name;
    member->ready_at = clock::now();
    q.ready.push_back(std::move(*member));
    fill();
  });
}

void kernel_pool::tick() {
  if (!running_) return;
  const auto now = clock::now();
  for (auto& [name, p] : pools_) {
    while (!p.demand.empty() && now - p.demand.front() > demand_window)
      p.demand.pop_front();
    // One retirement per pool and tick: a member that waited too long (its
    // sandbox's TTL runs while it waits), else one the demand no longer needs.
    if (!p.ready.empty() &&
        (now - p.ready.front().ready_at > settings_.max_wait ||
         (p.ready.size() > target(p) && now - p.ready.front().ready_at > surplus_grace))) {
      auto member = std::move(p.ready.front());
      p.ready.pop_front();
      ++p.counts.retired;
      log::info("pool_member_retired", {{"kernel_name", name}, {"sandbox_id", member.box->id}});
      retire_(member);
    }
  }
  fill();
  timer_.expires_after(std::chrono::seconds(1));
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) tick();
  });
}

std::map<std::string, kernel_pool::status> kernel_pool::statuses() const {
  std::map<std::string, status> out;
  for (const auto& [name, p] : pools_) {
    auto s = p.counts;
    s.ready = static_cast<unsigned>(p.ready.size());
    s.starting = p.starting;
    s.target = target(p);
    s.memory_bytes = 0;
    for (const auto& m : p.ready)
      s.memory_bytes += m.memory_bytes;
    out.emplace(name, s);
  }
  return out;
}

}  // namespace sandgate::gateway
