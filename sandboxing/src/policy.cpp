#include "sandboxing/policy.hpp"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace sandgate::sandboxing {
namespace {

using json = nlohmann::json;

[[noreturn]] void fail(const std::string& field, const std::string& message) {
  throw policy_error("policy: " + field + ": " + message);
}

void refuse_unknown(const json& object, const std::string& where, const std::set<std::string>& known) {
  if (!object.is_object()) fail(where.empty() ? "(document)" : where, "must be an object");
  for (const auto& [key, value] : object.items()) {
    if (!known.contains(key)) fail(where.empty() ? key : where + "." + key, "unknown field");
  }
}

std::uint64_t get_uint(const json& object, const char* key, const std::string& field,
                       std::uint64_t fallback) {
  auto it = object.find(key);
  if (it == object.end()) return fallback;
  if (!it->is_number_unsigned()) fail(field, "must be a non-negative integer");
  return it->get<std::uint64_t>();
}

std::string get_string(const json& object, const char* key, const std::string& field, std::string fallback) {
  auto it = object.find(key);
  if (it == object.end()) return fallback;
  if (!it->is_string()) fail(field, "must be a string");
  return it->get<std::string>();
}

void parse_limits(const json& j, limits& l) {
  refuse_unknown(
      j, "limits",
      {"memory_bytes", "cpu", "pids", "workspace_bytes", "tmp_bytes", "open_files", "file_size_bytes"});
  l.memory_bytes = get_uint(j, "memory_bytes", "limits.memory_bytes", l.memory_bytes);
  if (auto it = j.find("cpu"); it != j.end()) {
    if (!it->is_number()) fail("limits.cpu", "must be a number of cores");
    l.cpu = it->get<double>();
  }
  l.pids = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(get_uint(j, "pids", "limits.pids", l.pids), 1u << 30));
  l.workspace_bytes = get_uint(j, "workspace_bytes", "limits.workspace_bytes", l.workspace_bytes);
  l.tmp_bytes = get_uint(j, "tmp_bytes", "limits.tmp_bytes", l.tmp_bytes);
  l.open_files = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(get_uint(j, "open_files", "limits.open_files", l.open_files), 1u << 30));
  l.file_size_bytes = get_uint(j, "file_size_bytes", "limits.file_size_bytes", l.file_size_bytes);
}

void parse_env(const json& j, environment& e) {
  refuse_unknown(j, "env", {"set", "pass"});
  if (auto it = j.find("set"); it != j.end()) {
    if (!it->is_object()) fail("env.set", "must be an object of strings");
    for (const auto& [key, value] : it->items()) {
      if (!value.is_string()) fail("env.set." + key, "must be a string");
      e.set[key] = value.get<std::string>();
    }
  }
  if (auto it = j.find("pass"); it != j.end()) {
    if (!it->is_array()) fail("env.pass", "must be an array of names");
    for (const auto& name : *it) {
      if (!name.is_string()) fail("env.pass", "must be an array of names");
      e.pass.push_back(name.get<std::string>());
    }
  }
}

void parse_mounts(const json& j, std::vector<bind_mount>& mounts) {
  if (!j.is_array()) fail("mounts", "must be an array");
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string where = "mounts[" + std::to_string(i) + "]";
    refuse_unknown(j[i], where, {"source", "target", "read_only"});
    bind_mount m;
    m.source = get_string(j[i], "source", where + ".source", "");
    m.target = get_string(j[i], "target", where + ".target", "");
    if (auto it = j[i].find("read_only"); it != j[i].end()) {
      if (!it->is_boolean()) fail(where + ".read_only", "must be true or false");
      m.read_only = it->get<bool>();
    }
    mounts.push_back(std::move(m));
  }
}

}  // namespace

policy parse_policy(std::string_view json_text) {
  json j = json::parse(json_text, nullptr, false);
  if (j.is_discarded()) throw policy_error("policy: not valid JSON");
  refuse_unknown(j, "",
                 {"limits", "ttl_s", "max_execution_s", "network", "network_ceiling", "env", "hostname",
                  "mounts", "uid", "gid"});
  policy p;
  if (auto it = j.find("limits"); it != j.end()) parse_limits(*it, p.limits);
  p.ttl_s = get_uint(j, "ttl_s", "ttl_s", p.ttl_s);
  p.max_execution_s = get_uint(j, "max_execution_s", "max_execution_s", p.max_execution_s);
  if (auto it = j.find("network"); it != j.end()) p.network = parse_network_policy(*it, "network");
  p.network_ceiling = p.network;
  if (auto it = j.find("network_ceiling"); it != j.end())
    p.network_ceiling = parse_network_policy(*it, "network_ceiling");
  if (auto it = j.find("env"); it != j.end()) parse_env(*it, p.env);
  p.hostname = get_string(j, "hostname", "hostname", p.hostname);
  if (auto it = j.find("mounts"); it != j.end()) parse_mounts(*it, p.mounts);
  p.uid = static_cast<std::uint32_t>(std::min<std::uint64_t>(get_uint(j, "uid", "uid", p.uid), 1ull << 32));
  p.gid = static_cast<std::uint32_t>(std::min<std::uint64_t>(get_uint(j, "gid", "gid", p.gid), 1ull << 32));
  validate(p);
  return p;
}

policy load_policy(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw policy_error("policy: cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  try {
    return parse_policy(text.str());
  } catch (const policy_error& e) {
    throw policy_error(path + ": " + e.what());
  }
}

std::string to_json_text(const policy& p) {
  json mounts = json::array();
  for (const auto& m : p.mounts)
    mounts.push_back({{"source", m.source}, {"target", m.target}, {"read_only", m.read_only}});
  const json j = {{"limits",
                   {{"memory_bytes", p.limits.memory_bytes},
                    {"cpu", p.limits.cpu},
                    {"pids", p.limits.pids},
                    {"workspace_bytes", p.limits.workspace_bytes},
                    {"tmp_bytes", p.limits.tmp_bytes},
                    {"open_files", p.limits.open_files},
                    {"file_size_bytes", p.limits.file_size_bytes}}},
                  {"ttl_s", p.ttl_s},
                  {"max_execution_s", p.max_execution_s},
                  {"network", to_json(p.network)},
                  {"network_ceiling", to_json(p.network_ceiling)},
                  {"env", {{"set", p.env.set}, {"pass", p.env.pass}}},
                  {"hostname", p.hostname},
                  {"mounts", mounts},
                  {"uid", p.uid},
                  {"gid", p.gid}};
  return j.dump(2);
}

}  // namespace sandgate::sandboxing
