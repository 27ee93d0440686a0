#include "execution_watchdog.hpp"

#include "../util/metrics.hpp"

#include <gateway/log.hpp>

#include <algorithm>

namespace sandgate::gateway {

execution_watchdog::execution_watchdog(boost::asio::io_context& io, const execution_log& log,
                                       std::string kernel_id, std::chrono::seconds max_execution,
                                       std::chrono::seconds interrupt_grace, actions act)
    : log_(log),
      kernel_id_(std::move(kernel_id)),
      max_execution_(max_execution),
      interrupt_grace_(interrupt_grace),
      act_(std::move(act)),
      timer_(io) {}

void execution_watchdog::reset() {
  running_.clear();
  timer_.cancel();
}

void execution_watchdog::on_state(const std::string& msg_id, std::string_view state) {
  if (state == "idle" && msg_id == running_) return reset();
  if (state != "busy" || msg_id == running_) return;
  auto record = log_.find(msg_id);
  if (!record) return;
  std::optional<std::chrono::milliseconds> limit = record->timeout;
  if (max_execution_.count() > 0 && (!limit || *limit > max_execution_))
    limit = std::chrono::duration_cast<std::chrono::milliseconds>(max_execution_);
  running_ = msg_id;
  timer_.cancel();
  if (!limit) return;
  if (record->reply_lost)  // taken up after a gateway restart: the limit counts from its start
    timer_.expires_at(std::max(std::chrono::steady_clock::now(), record->started_steady + *limit));
  else
    timer_.expires_after(*limit);
  timer_.async_wait([weak = weak_from_this(), msg_id](const boost::system::error_code& ec) {
    if (auto self = weak.lock(); self && !ec) self->on_limit(msg_id);
  });
}

// Past the limit: interrupt, and look again after the grace; still busy
// with the same execute then: restart.
void execution_watchdog::on_limit(const std::string& msg_id) {
  if (msg_id != running_) return;
  auto record = log_.find(msg_id);
  if (record && !record->timed_out) {
    record->timed_out = true;
    log::warn("execution_timed_out", {{"kernel_id", kernel_id_}, {"msg_id", msg_id}});
    act_.interrupt();
    timer_.expires_after(interrupt_grace_);
    timer_.async_wait([weak = weak_from_this(), msg_id](const boost::system::error_code& ec) {
      if (auto self = weak.lock(); self && !ec) self->on_limit(msg_id);
    });
    return;
  }
  log::warn("execution_restart", {{"kernel_id", kernel_id_}, {"msg_id", msg_id}});
  ++gateway_metrics().kernel_restarts_for_time;
  reset();
  act_.restart(msg_id);
}

}  // namespace sandgate::gateway
