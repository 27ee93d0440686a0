// The error of a policy that is not valid JSON or breaks a rule; what() names
// the field, e.g. "policy: limits.memory_bytes: must be at least 16777216".
#pragma once

#include <stdexcept>

namespace sandgate::sandboxing {

class policy_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace sandgate::sandboxing
