#pragma once
// What the creator of a sandbox asks for (POST /api/sandboxes, or a kernel's
// start for its implicit sandbox): each field optional, anything unset takes
// the operator's policy's value. Parsed and checked for form here; checked
// against the operator's policy when the sandbox's policy is built
// (sandbox_policy_builder).

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace sandgate::gateway {

// [A-Za-z_][A-Za-z0-9_]*: a portable environment variable name.
[[nodiscard]] bool is_env_name(std::string_view name);
// KERNEL_*: what Jupyter clients send about who and where (user name,
// working directory); always accepted from a kernel start request.
[[nodiscard]] inline bool is_kernel_variable(std::string_view name) {
  return name.starts_with("KERNEL_");
}

struct sandbox_settings {
  std::optional<std::uint64_t> ttl_s;
  std::optional<std::uint64_t> idle_timeout_s;
  std::map<std::string, std::string> metadata;
  std::optional<std::uint64_t> memory_bytes;
  std::optional<double> cpu;
  std::optional<std::uint64_t> pids;
  std::optional<std::uint64_t> workspace_bytes;
  std::optional<nlohmann::json> network;  // as sent; parsed (and checked) at create
  std::map<std::string, std::string> env;

  // From a POST /api/sandboxes body; nullopt with `error` set, naming the
  // field, when invalid.
  static std::optional<sandbox_settings> from_json(const nlohmann::json& body, std::string& error);
};

}  // namespace sandgate::gateway
