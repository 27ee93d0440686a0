#pragma once
// Each sandbox's policy, built as a typed sandboxing::policy: the operator's
// policy file, read once with the parser, defaults and validator that
// sandgate-sandbox uses, with the creator's settings applied to its fields.
// A creator may lower the operator's limits and TTL, never raise them; what
// the result breaks is refused with the field named
// ("limits.memory_bytes: must be at least 16777216").

#include "../util/domain_error.hpp"
#include "sandbox_entry.hpp"
#include "sandbox_settings.hpp"

#include <sandboxing/network_policy.hpp>
#include <sandboxing/policy.hpp>

#include <gateway/kernelspec.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace sandgate::gateway {

// Kernel programs outside the system dirs (this install's own kernels, a
// build tree) must be visible inside: their directories, each with where it
// is bound read-only (/opt/sandgate/programs/N; the host path may be one the
// sandbox builds, like /tmp).
[[nodiscard]] std::map<std::string, std::string> program_binds(const kernelspec_catalog& specs);

// The limits of a policy that a sandbox's record keeps.
[[nodiscard]] sandbox_limits limits_of(const sandboxing::policy& p);

class sandbox_policy_builder {
 public:
  // Reads the operator's policy. Throws sandboxing::policy_error naming the
  // file and the field ("<file>: policy: ttl_s: must be at least 1").
  explicit sandbox_policy_builder(const std::filesystem::path& operator_file);

  [[nodiscard]] const sandboxing::policy& operator_policy() const noexcept { return operator_; }
  // The operator's limits: every sandbox's unless its creator lowers them,
  // and the most a creator may ask for.
  [[nodiscard]] sandbox_limits default_limits() const { return limits_of(operator_); }
  [[nodiscard]] std::uint64_t max_ttl_s() const noexcept { return operator_.ttl_s; }
  // A TTL a creator asks for (at create, claim or extend): nullopt when it is
  // at most the operator's, else the error.
  [[nodiscard]] std::optional<domain_error> check_ttl(std::uint64_t ttl_s) const;

  // The operator's policy with the creator's limits, TTL and env, `network`
  // (the creator's, already checked against the ceiling, or the default) and
  // read-only binds of `program_dirs`. nullopt with `err` (fault::invalid,
  // naming the field) when the settings ask for more than the operator's
  // policy allows or the result is not a valid policy.
  [[nodiscard]] std::optional<sandboxing::policy> build(
      const sandbox_settings& settings, const sandboxing::network_policy& network,
      const std::map<std::string, std::string>& program_dirs, domain_error& err) const;

  // Writes a policy where the supervisor reads it (its directory is
  // created). nullopt, or the error naming the path.
  static std::optional<domain_error> write(const sandboxing::policy& p, const std::filesystem::path& path);

 private:
  sandboxing::policy operator_;
};

}  // namespace sandgate::gateway
