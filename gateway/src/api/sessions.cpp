#include "sessions.hpp"

#include <gateway/log.hpp>

#include <ctime>

namespace sandgate::gateway {

void session_store::restore(const std::function<bool(const std::string& kernel_id)>& known) {
  std::vector<session_row> rows;
  try {
    rows = registry_.sessions();
  } catch (const std::exception& e) {
    log::error("registry_read_failed", {{"what", "sessions"}, {"error", e.what()}});
    return;
  }
  for (const auto& row : rows) {
    if (!known(row.kernel_id)) {
      log::info(
          "session_dropped",
          {{"session_id", row.id}, {"kernel_id", row.kernel_id}, {"why", "its kernel did not come back"}});
      registry_.delete_session(row.id);
      continue;
    }
    records_[row.id] = row;
  }
}

void session_store::put(session_record s) {
  if (s.created == 0) s.created = static_cast<std::int64_t>(std::time(nullptr));
  registry_.put_session(s);
  records_[s.id] = std::move(s);
}

void session_store::erase(const std::string& id) {
  registry_.delete_session(id);
  records_.erase(id);
}

session_record* session_store::find(const std::string& id) {
  auto it = records_.find(id);
  return it == records_.end() ? nullptr : &it->second;
}

session_record* session_store::find_by_path(const std::string& path, const std::string& owner) {
  for (auto& [id, s] : records_)
    if (s.path == path && s.owner == owner) return &s;
  return nullptr;
}

std::vector<session_record> session_store::list() const {
  std::vector<session_record> out;
  for (const auto& [id, s] : records_)
    out.push_back(s);
  return out;
}

void session_store::forget_kernel(const std::string& kernel_id) {
  registry_.delete_sessions_of(kernel_id);
  std::erase_if(records_, [&](const auto& kv) { return kv.second.kernel_id == kernel_id; });
}

}  // namespace sandgate::gateway
