#include "sessions.hpp"

namespace sandgate::gateway {

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
  std::erase_if(records_, [&](const auto& kv) { return kv.second.kernel_id == kernel_id; });
}

}  // namespace sandgate::gateway
