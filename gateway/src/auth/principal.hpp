#pragma once
// Who is asking: a principal, named by its token, with the quotas the
// operator gave it. Below everything that owns resources (kernels,
// sandboxes), which record and check their owner by it.

#include <cstdint>
#include <optional>
#include <string>

namespace sandgate::gateway {

struct quotas {
  std::optional<std::uint64_t> sandboxes;     // at once, starting ones included
  std::optional<std::uint64_t> kernels;       // at once, starting ones included
  std::optional<std::uint64_t> memory_bytes;  // the sum of their sandboxes' memory limits
};

struct principal {
  std::string name;
  bool admin = false;
  quotas limits;

  // Whether this principal may see what `owner` made.
  [[nodiscard]] bool sees(const std::string& owner) const { return admin || owner == name; }
};

}  // namespace sandgate::gateway
