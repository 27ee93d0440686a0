#include "sandbox_policy_builder.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <string_view>
#include <system_error>

namespace sandgate::gateway {
namespace fs = std::filesystem;
namespace sb = sandgate::sandboxing;

namespace {

// True when the sandbox's read-only system binds already show `path`.
bool visible_in_sandbox(const fs::path& path) {
  for (const char* root : {"/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/lib32/"})
    if (path.string().rfind(root, 0) == 0) return true;
  return false;
}

// A creator's value for one of the operator's limits: at most the operator's.
template <class Wanted, class Limit>
bool lower(const char* field, const std::optional<Wanted>& wanted, Limit& limit, domain_error& err) {
  if (!wanted) return true;
  if (*wanted > limit) {
    err = {fault::invalid, "limits." + std::string(field) + " " + nlohmann::json(*wanted).dump() +
                               " is above this gateway's maximum of " + nlohmann::json(limit).dump()};
    return false;
  }
  limit = static_cast<Limit>(*wanted);
  return true;
}

// "policy: limits.cpu: ..." as the API says it: the field first.
std::string without_prefix(const sb::policy_error& e) {
  constexpr std::string_view prefix = "policy: ";
  const std::string_view what = e.what();
  return std::string(what.starts_with(prefix) ? what.substr(prefix.size()) : what);
}

}  // namespace

std::map<std::string, std::string> program_binds(const kernelspec_catalog& specs) {
  std::set<std::string> dirs;
  for (const auto& [name, spec] : specs.all())
    if (!spec.argv.empty() && fs::path(spec.argv[0]).is_absolute()) {
      const auto dir = fs::path(spec.argv[0]).parent_path();
      if (!visible_in_sandbox(dir)) dirs.insert(dir.string());
    }
  std::map<std::string, std::string> binds;
  for (const auto& dir : dirs)
    if (fs::is_directory(dir)) binds[dir] = "/opt/sandgate/programs/" + std::to_string(binds.size());
  return binds;
}

sandbox_limits limits_of(const sb::policy& p) {
  return {p.limits.memory_bytes, p.limits.cpu, p.limits.pids, p.limits.workspace_bytes};
}

sandbox_policy_builder::sandbox_policy_builder(const fs::path& operator_file)
    : operator_(sb::load_policy(operator_file.string())) {}

std::optional<domain_error> sandbox_policy_builder::check_ttl(std::uint64_t ttl_s) const {
  if (ttl_s <= operator_.ttl_s) return std::nullopt;
  return domain_error{fault::invalid, "ttl_s " + std::to_string(ttl_s) +
                                          " is above this gateway's maximum of " +
                                          std::to_string(operator_.ttl_s)};
}

std::optional<sb::policy> sandbox_policy_builder::build(
    const sandbox_settings& settings, const sb::network_policy& network,
    const std::map<std::string, std::string>& program_dirs, domain_error& err) const {
  sb::policy p = operator_;
  if (!lower("memory_bytes", settings.memory_bytes, p.limits.memory_bytes, err) ||
      !lower("cpu", settings.cpu, p.limits.cpu, err) || !lower("pids", settings.pids, p.limits.pids, err) ||
      !lower("workspace_bytes", settings.workspace_bytes, p.limits.workspace_bytes, err))
    return std::nullopt;
  p.ttl_s = settings.ttl_s.value_or(operator_.ttl_s);
  if (auto e = check_ttl(p.ttl_s)) {
    err = std::move(*e);
    return std::nullopt;
  }
  p.network = network;
  for (const auto& [name, value] : settings.env)
    p.env.set[name] = value;
  for (const auto& [host, inside] : program_dirs)
    p.mounts.push_back({host, inside, true});
  try {
    sb::validate(p);
  } catch (const sb::policy_error& e) {
    err = {fault::invalid, without_prefix(e)};
    return std::nullopt;
  }
  return p;
}

std::optional<domain_error> sandbox_policy_builder::write(const sb::policy& p, const fs::path& path) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::trunc);
  out << sb::to_json_text(p) << '\n';
  out.close();
  if (ec || !out)
    return domain_error{fault::internal, "cannot write the sandbox's policy " + path.string() + ": " +
                                             (ec ? ec.message() : std::generic_category().message(errno))};
  return std::nullopt;
}

}  // namespace sandgate::gateway
