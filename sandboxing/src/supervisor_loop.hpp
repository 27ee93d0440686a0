// The supervisor's state and loop, shared by supervisor.cpp (events) and
// supervisor_requests.cpp (the gateway's requests).
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sandboxing/control_connection.hpp"
#include "sandboxing/control_protocol.hpp"
#include "sandboxing/supervisor.hpp"
#include "sandboxing/unique_fd.hpp"

namespace sandgate::sandboxing::detail {

using json = nlohmann::json;

inline constexpr std::size_t max_children = 256;
inline constexpr std::size_t max_queued_events = 1024;
inline constexpr int standalone_ttl_exit = 124;

class supervisor {
 public:
  explicit supervisor(const supervisor_config& config) : config_(config) {}
  int run();

 private:
  void watch(int fd, std::uint32_t events);
  void on_signal();
  void reap();
  void on_accept();
  void on_connection(std::uint32_t events);
  void handle(const json& message);
  control::reply do_spawn(const json& message);
  control::reply do_signal(const json& message);
  void report(const control::exit_event& event);
  void drop_connection();
  void finish(int code);

  const supervisor_config& config_;
  unique_fd epoll_;
  unique_fd signals_;
  unique_fd timer_;
  std::unique_ptr<control_connection> connection_;
  std::map<std::string, pid_t> children_;  // named children still running
  std::map<pid_t, std::string> names_;
  std::deque<json> undelivered_;  // exit events while no gateway was connected
  std::uint64_t oom_kills_seen_ = 0;
  pid_t main_pid_ = 0;
  std::optional<int> exit_code_;
};

}  // namespace sandgate::sandboxing::detail
