#pragma once
// Why ids of sandboxes and kernels that no longer exist went away
// ("expired", "culled", "deleted", "ended", "lost", ...), answered for an
// hour: from memory (the last 10000 ids), and for ids that ended under an
// earlier gateway from the registry.

#include "../registry/registry.hpp"

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace sandgate::gateway {

class gone_ids {
 public:
  explicit gone_ids(registry& reg) : registry_(reg) {}

  // The first reason stands (a sandbox's end, before its kernels' losses).
  void remember(const std::string& id, const std::string& reason);
  // Why `id` went away, or nothing when it is unknown or went over an hour ago.
  [[nodiscard]] std::optional<std::string> find(const std::string& id) const;

 private:
  registry& registry_;
  std::map<std::string, std::pair<std::string, std::chrono::steady_clock::time_point>> reasons_;
  std::deque<std::string> order_;  // oldest first
};

}  // namespace sandgate::gateway
