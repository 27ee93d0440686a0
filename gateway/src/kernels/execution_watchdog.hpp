#pragma once
// The time limit of the execute a kernel is busy with: the policy's
// max_execution_s, or a REST execute's own shorter timeout. Past it the
// kernel is interrupted (its state survives); if it is still busy with the
// same execute a grace period later, it is restarted (its state is lost,
// and the clients are told so).

#include "executions.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace sandgate::gateway {

class execution_watchdog : public std::enable_shared_from_this<execution_watchdog> {
 public:
  struct actions {
    std::function<void()> interrupt;
    std::function<void(const std::string& msg_id)> restart;  // the execute that would not stop
  };

  // `max_execution`: 0 for no limit of the policy's own. Owned by a
  // shared_ptr: its timer's handlers hold it weakly.
  execution_watchdog(boost::asio::io_context& io, const execution_log& log, std::string kernel_id,
                     std::chrono::seconds max_execution, std::chrono::seconds interrupt_grace, actions act);

  // The kernel went busy or idle for the execute `msg_id` (one the log tracks).
  void on_state(const std::string& msg_id, std::string_view state);
  // The kernel restarted, died or ended: nothing runs any more.
  void reset();

 private:
  void on_limit(const std::string& msg_id);

  const execution_log& log_;
  std::string kernel_id_;
  std::chrono::seconds max_execution_;
  std::chrono::seconds interrupt_grace_;
  actions act_;
  std::string running_;  // the execute the kernel is busy with, if tracked
  boost::asio::steady_timer timer_;
};

}  // namespace sandgate::gateway
