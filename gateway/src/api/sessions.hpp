#pragma once
// /api/sessions records: a path/name/type bound to a kernel, as
// jupyter_server keeps them.

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sandgate::gateway {

struct session_record {
  std::string id;
  std::string path;
  std::string name;
  std::string type;
  std::string kernel_id;
  std::string owner;
};

class session_store {
 public:
  void put(session_record s) { records_[s.id] = std::move(s); }
  void erase(const std::string& id) { records_.erase(id); }
  [[nodiscard]] session_record* find(const std::string& id);
  [[nodiscard]] session_record* find_by_path(const std::string& path, const std::string& owner);
  [[nodiscard]] std::vector<session_record> list() const;
  // Drops the sessions whose kernel is gone.
  void forget_kernel(const std::string& kernel_id);

 private:
  std::map<std::string, session_record> records_;
};

}  // namespace sandgate::gateway
