#include "sandbox_entry.hpp"

namespace sandgate::gateway {
using json = nlohmann::json;

void sandbox_entry::touch() {
  last_activity = std::chrono::steady_clock::now();
  last_activity_wall = std::chrono::system_clock::now();
}

void to_json(json& j, const sandbox_limits& l) {
  j = {{"memory_bytes", l.memory_bytes},
       {"cpu", l.cpu},
       {"pids", l.pids},
       {"workspace_bytes", l.workspace_bytes}};
}

std::string to_record(const sandbox_entry& s) {
  const json record = {
      {"implicit", s.implicit},
      {"pooled", s.pooled},
      {"unsandboxed", s.unsandboxed},
      {"created_us",
       std::chrono::duration_cast<std::chrono::microseconds>(s.created.time_since_epoch()).count()},
      {"expires_at", s.expires_at},
      {"idle_timeout_s", s.idle_timeout_s},
      {"max_execution_s", s.max_execution_s},
      {"metadata", s.metadata},
      {"limits", s.limits},
      {"network", sandboxing::to_json(s.network)},
      {"egress_opened", s.egress_opened},
      {"env", s.env},
      {"program_dirs", s.program_dirs},
      {"slot", s.slot},
      {"root_pid", s.root_pid}};
  return record.dump();
}

std::shared_ptr<sandbox_entry> from_record(const registry_row& row) {
  const json r = json::parse(row.record);
  auto s = std::make_shared<sandbox_entry>();
  s->id = row.id;
  s->owner = row.owner;
  s->implicit = r.at("implicit").get<bool>();
  s->pooled = r.value("pooled", false);
  s->unsandboxed = r.at("unsandboxed").get<bool>();
  s->created =
      std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::microseconds(r.at("created_us").get<std::int64_t>())));
  s->expires_at = r.at("expires_at").get<std::int64_t>();
  s->idle_timeout_s = r.at("idle_timeout_s").get<std::uint64_t>();
  s->max_execution_s = r.at("max_execution_s").get<std::uint64_t>();
  s->metadata = r.at("metadata").get<std::map<std::string, std::string>>();
  const auto& l = r.at("limits");
  s->limits = {l.at("memory_bytes").get<std::uint64_t>(), l.at("cpu").get<double>(),
               l.at("pids").get<std::uint64_t>(), l.at("workspace_bytes").get<std::uint64_t>()};
  s->network = sandboxing::parse_network_policy(r.at("network"), "network");
  s->egress_opened =  // "egress_forwarder" in records of earlier gateways
      r.value("egress_opened", r.value("egress_forwarder", sandboxing::egress_on(s->network)));
  s->env = r.at("env").get<std::map<std::string, std::string>>();
  s->program_dirs = r.at("program_dirs").get<std::map<std::string, std::string>>();
  s->slot = r.at("slot").get<unsigned>();
  s->root_pid = r.at("root_pid").get<int>();
  s->touch();
  return s;
}

}  // namespace sandgate::gateway
