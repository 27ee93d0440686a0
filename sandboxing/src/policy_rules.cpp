// The validation rules of a policy, each naming the field it checks.
#include <algorithm>
#include <array>
#include <cmath>

#include "sandboxing/policy.hpp"

namespace sandgate::sandboxing {
namespace {

[[noreturn]] void fail(const std::string& field, const std::string& message) {
  throw policy_error("policy: " + field + ": " + message);
}

void at_least(std::uint64_t value, std::uint64_t minimum, const std::string& field) {
  if (value < minimum) fail(field, "must be at least " + std::to_string(minimum));
}

void at_most(std::uint64_t value, std::uint64_t maximum, const std::string& field) {
  if (value > maximum) fail(field, "must be at most " + std::to_string(maximum));
}

bool valid_env_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool clean_absolute_path(const std::string& path) {
  if (path.empty() || path[0] != '/' || path.find('\0') != std::string::npos) return false;
  std::size_t start = 1;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    const std::string part = path.substr(start, end - start);
    if (part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

// Inside paths that the sandbox itself builds; a policy mount may neither
// replace them nor go below them.
bool reserved_target(const std::string& target) {
  static const std::array<std::string_view, 13> reserved = {
      "/proc", "/dev", "/usr",          "/lib", "/lib64",     "/bin",    "/sbin",
      "/etc",  "/tmp", "/run/sandgate", "/sys", "/workspace", "/var/tmp"};
  std::string t = target;
  while (t.size() > 1 && t.back() == '/')
    t.pop_back();
  if (t == "/" || t == "/run") return true;
  for (const auto& r : reserved) {
    if (t == r || t.starts_with(std::string(r) + "/")) return true;
  }
  return false;
}

}  // namespace

void validate(const policy& p) {
  const auto& l = p.limits;
  at_least(l.memory_bytes, 16ull << 20, "limits.memory_bytes");
  if (!std::isfinite(l.cpu) || l.cpu < 0.01 || l.cpu > 1024)
    fail("limits.cpu", "must be between 0.01 and 1024 cores");
  at_least(l.pids, 8, "limits.pids");
  at_most(l.pids, 1u << 22, "limits.pids");
  at_least(l.workspace_bytes, 1ull << 20, "limits.workspace_bytes");
  at_least(l.tmp_bytes, 1ull << 20, "limits.tmp_bytes");
  at_least(l.open_files, 16, "limits.open_files");
  at_most(l.open_files, 1u << 20, "limits.open_files");
  at_least(l.file_size_bytes, 1ull << 20, "limits.file_size_bytes");
  at_least(p.ttl_s, 1, "ttl_s");
  at_most(p.ttl_s, 365ull * 24 * 3600, "ttl_s");
  at_least(p.max_execution_s, 1, "max_execution_s");
  for (const auto& [name, value] : p.env.set) {
    if (!valid_env_name(name)) fail("env.set." + name, "is not a valid variable name");
    if (value.find('\0') != std::string::npos) fail("env.set." + name, "must not contain NUL");
  }
  for (const auto& name : p.env.pass) {
    if (!valid_env_name(name)) fail("env.pass", "\"" + name + "\" is not a valid variable name");
  }
  if (p.hostname.empty() || p.hostname.size() > 63) fail("hostname", "must be 1 to 63 characters");
  for (char c : p.hostname) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') {
      fail("hostname", "may hold only letters, digits, '-' and '.'");
    }
  }
  for (std::size_t i = 0; i < p.mounts.size(); ++i) {
    const std::string where = "mounts[" + std::to_string(i) + "]";
    if (!clean_absolute_path(p.mounts[i].source))
      fail(where + ".source", "must be an absolute path without . or ..");
    if (!clean_absolute_path(p.mounts[i].target))
      fail(where + ".target", "must be an absolute path without . or ..");
    if (reserved_target(p.mounts[i].target)) {
      fail(where + ".target", p.mounts[i].target + " is built by the sandbox and cannot be replaced");
    }
  }
  if (const auto why = exceeds(p.network, p.network_ceiling))
    fail("network", "asks for more than network_ceiling: " + *why);
  if (p.uid == 0 || p.uid > 65533) fail("uid", "must be between 1 and 65533 (never root)");
  if (p.gid == 0 || p.gid > 65533) fail("gid", "must be between 1 and 65533 (never root)");
}

}  // namespace sandgate::sandboxing
