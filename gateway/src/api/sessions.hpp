#pragma once
// /api/sessions records: a path/name/type bound to a kernel, as
// jupyter_server keeps them. Every change is written to the registry, so
// that a restarted gateway takes back the sessions of the kernels it
// re-attached.

#include "../registry/registry.hpp"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sandgate::gateway {

// The registry's row is the record itself (`created` is set when first put).
using session_record = session_row;

class session_store {
 public:
  // Writes through to `reg`, which outlives the store.
  explicit session_store(registry& reg) : registry_(reg) {}

  // Takes back the records an earlier gateway stored whose kernel is
  // `known` (re-attached, starting or not); the others' kernels did not
  // come back, and their records are deleted.
  void restore(const std::function<bool(const std::string& kernel_id)>& known);
  // Inserts or replaces a record, here and in the registry.
  void put(session_record s);
  void erase(const std::string& id);
  [[nodiscard]] session_record* find(const std::string& id);
  [[nodiscard]] session_record* find_by_path(const std::string& path, const std::string& owner);
  [[nodiscard]] std::vector<session_record> list() const;
  // Drops the sessions whose kernel is gone.
  void forget_kernel(const std::string& kernel_id);

 private:
  registry& registry_;
  std::map<std::string, session_record> records_;
};

}  // namespace sandgate::gateway
