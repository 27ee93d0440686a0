#include "sandbox_gone_ids.hpp"

#include <gateway/log.hpp>

#include <ctime>

namespace sandgate::gateway {

namespace {

constexpr std::size_t max_gone_ids = 10000;
constexpr auto gone_retention = std::chrono::hours(1);

}  // namespace

void gone_ids::remember(const std::string& id, const std::string& reason) {
  if (reasons_.count(id)) return;
  reasons_[id] = {reason, std::chrono::steady_clock::now()};
  order_.push_back(id);
  while (order_.size() > max_gone_ids) {
    reasons_.erase(order_.front());
    order_.pop_front();
  }
}

std::optional<std::string> gone_ids::find(const std::string& id) const {
  auto it = reasons_.find(id);
  if (it != reasons_.end())
    return std::chrono::steady_clock::now() - it->second.second > gone_retention
               ? std::nullopt
               : std::optional<std::string>(it->second.first);
  try {  // ended under an earlier gateway
    return registry_.ended(id, static_cast<std::int64_t>(std::time(nullptr)) -
                                   std::chrono::duration_cast<std::chrono::seconds>(gone_retention).count());
  } catch (const std::exception& e) {
    log::error("registry_read_failed", {{"error", e.what()}});
    return std::nullopt;
  }
}

}  // namespace sandgate::gateway
