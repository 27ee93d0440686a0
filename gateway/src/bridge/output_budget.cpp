#include "output_budget.hpp"

#include "../util/metrics.hpp"

#include <unistd.h>

#include <algorithm>
#include <utility>

namespace sandgate::gateway {

std::size_t output_budget::host_default_bytes() {
  constexpr std::size_t floor = 256ull * 1024 * 1024;
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return floor;
  return std::max(floor, static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) / 8);
}

output_account::~output_account() {
  if (held_ > 0) remove(held_);
}

void output_account::add(std::size_t bytes) {
  if (bytes == 0) return;
  if (held_ == 0) ++budget_->holders_;
  held_ += bytes;
  budget_->held_ += bytes;
  review();
}

void output_account::remove(std::size_t bytes) {
  if (bytes == 0) return;
  held_ -= bytes;
  budget_->held_ -= bytes;
  if (held_ == 0) --budget_->holders_;
  review();
}

// Paused above the share; going on at half of it, so that a kernel near its
// share is not paused and resumed with every message.
void output_account::review() {
  const std::size_t share = budget_->share_bytes();
  const bool pause = paused_ ? held_ > share / 2 : held_ > share;
  if (pause == paused_) return;
  paused_ = pause;
  if (pause) ++gateway_metrics().output_budget_pauses;
  if (on_pause_) on_pause_(pause);
}

output_charge::output_charge(std::shared_ptr<output_account> account, std::size_t bytes)
    : account_(std::move(account)), bytes_(0) {
  add(bytes);
}

output_charge::output_charge(output_charge&& other) noexcept
    : account_(std::move(other.account_)), bytes_(std::exchange(other.bytes_, 0)) {}

output_charge& output_charge::operator=(output_charge&& other) noexcept {
  if (this != &other) {
    release();
    account_ = std::move(other.account_);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void output_charge::add(std::size_t bytes) {
  if (!account_) return;
  bytes_ += bytes;
  account_->add(bytes);
}

void output_charge::release() {
  if (account_) account_->remove(std::exchange(bytes_, 0));
  account_.reset();
}

}  // namespace sandgate::gateway
