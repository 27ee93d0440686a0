#include "sandbox_settings.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <type_traits>

namespace sandgate::gateway {
using json = nlohmann::json;

namespace {

constexpr std::size_t max_metadata_entries = 64;
constexpr std::size_t max_metadata_bytes = 256;
constexpr std::size_t max_env_entries = 256;
constexpr std::size_t max_env_bytes = 64 * 1024;

template <class T>
bool read_number(const json& body, const char* key, std::optional<T>& out, std::string& error) {
  if (!body.contains(key) || body[key].is_null()) return true;
  const auto& v = body[key];
  if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>())) {
      error = std::string("\"") + key + "\" must be a positive number";
      return false;
    }
    out = v.get<T>();
  } else {
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() == 0) {
      error = std::string("\"") + key + "\" must be a positive integer";
      return false;
    }
    out = v.get<T>();
  }
  return true;
}

bool read_string_map(const json& body, const char* key, std::map<std::string, std::string>& out,
                     std::size_t max_entries, std::size_t max_bytes, bool names_are_identifiers,
                     std::string& error) {
  if (!body.contains(key) || body[key].is_null()) return true;
  const auto& m = body[key];
  if (!m.is_object() || m.size() > max_entries) {
    error = std::string("\"") + key + "\" must be an object of at most " + std::to_string(max_entries) +
            " string values";
    return false;
  }
  for (const auto& [k, v] : m.items()) {
    if (!v.is_string() || k.empty() || k.size() > max_bytes ||
        v.get_ref<const std::string&>().size() > max_bytes || (names_are_identifiers && !is_env_name(k))) {
      error = std::string("\"") + key + "\": bad entry \"" + k + "\"";
      return false;
    }
    out[k] = v.get<std::string>();
  }
  return true;
}

bool read_limits(const json& body, sandbox_settings& s, std::string& error) {
  if (!body.contains("limits") || body["limits"].is_null()) return true;
  const auto& l = body["limits"];
  if (!l.is_object()) {
    error = "\"limits\" must be an object";
    return false;
  }
  static const std::set<std::string> limit_keys = {"memory_bytes", "cpu", "pids", "workspace_bytes"};
  for (const auto& [k, v] : l.items())
    if (!limit_keys.count(k)) {
      error = "Unknown limit \"" + k + "\" (memory_bytes, cpu, pids, workspace_bytes)";
      return false;
    }
  return read_number(l, "memory_bytes", s.memory_bytes, error) && read_number(l, "cpu", s.cpu, error) &&
         read_number(l, "pids", s.pids, error) && read_number(l, "workspace_bytes", s.workspace_bytes, error);
}

}  // namespace

bool is_env_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::optional<sandbox_settings> sandbox_settings::from_json(const json& body, std::string& error) {
  static const std::set<std::string> known = {"ttl_s",  "idle_timeout_s", "metadata",
                                              "limits", "network",        "env"};
  for (const auto& [k, v] : body.items())
    if (!known.count(k)) {
      error = "Unknown field \"" + k + "\"";
      return std::nullopt;
    }
  sandbox_settings s;
  if (!read_number(body, "ttl_s", s.ttl_s, error) ||
      !read_number(body, "idle_timeout_s", s.idle_timeout_s, error) ||
      !read_string_map(body, "metadata", s.metadata, max_metadata_entries, max_metadata_bytes, false,
                       error) ||
      !read_string_map(body, "env", s.env, max_env_entries, max_env_bytes, true, error) ||
      !read_limits(body, s, error))
    return std::nullopt;
  if (body.contains("network") && !body["network"].is_null()) {
    const auto& n = body["network"];
    if (!n.is_string() && !n.is_object()) {
      error = "\"network\" must be a mode (\"none\", \"loopback\", \"allow\", \"open\") or an object";
      return std::nullopt;
    }
    s.network = n;  // checked against the operator's ceiling at create
  }
  return s;
}

}  // namespace sandgate::gateway
