// A sandbox's network: the creator's choice checked against the operator's
// ceiling, changes while it runs, and the egress proxy that enforces it.
#include "sandbox_manager.hpp"

#include "../util/metrics.hpp"

#include <gateway/log.hpp>

#include <algorithm>
#include <filesystem>

#include <sandboxing/policy_error.hpp>

namespace sandgate::gateway {
namespace sb = sandgate::sandboxing;
using json = nlohmann::json;

void sandbox_manager::load_network_defaults() {
  try {
    if (default_policy_.contains("network"))
      network_default_ = sb::parse_network_policy(default_policy_["network"], "network");
    network_ceiling_ = default_policy_.contains("network_ceiling")
                           ? sb::parse_network_policy(default_policy_["network_ceiling"], "network_ceiling")
                           : network_default_;
  } catch (const sb::policy_error& e) {
    // sandgate-sandbox refuses the policy with the same message at every start.
    log::error("policy_network_invalid", {{"policy", policy_file_.string()}, {"error", e.what()}});
  }
  // Sandboxes may ask for egress: the proxy runs from the start, so that
  // the first one to open it (a PATCH) finds it listening.
  if (sb::egress_on(network_ceiling_)) egress();
}

json sandbox_manager::network_text_value(const std::string& text) {
  // KERNEL_NETWORK: a JSON object or string, or a bare mode ("allow", "none").
  json value = json::parse(text, nullptr, false);
  if (value.is_discarded() || !(value.is_string() || value.is_object())) return text;
  return value;
}

std::optional<sb::network_policy> sandbox_manager::network_from(const json& value, domain_error& err) const {
  sb::network_policy wanted;
  try {
    wanted = sb::parse_network_policy(value, "network");
    // Limits a creator leaves out are the ceiling's, when it has lower ones.
    const bool given_connections = value.is_object() && value.contains("max_connections");
    const bool given_rate = value.is_object() && value.contains("bytes_per_second");
    if (!given_connections)
      wanted.max_connections = std::min(wanted.max_connections, network_ceiling_.max_connections);
    if (!given_rate)
      wanted.bytes_per_second = std::min(wanted.bytes_per_second, network_ceiling_.bytes_per_second);
  } catch (const sb::policy_error& e) {
    err = {fault::invalid, std::string(e.what()).substr(std::string_view("policy: ").size())};
    return std::nullopt;
  }
  if (const auto why = sb::exceeds(wanted, network_ceiling_)) {
    err = {fault::forbidden, "network: " + *why, "network_refused"};
    return std::nullopt;
  }
  return wanted;
}

std::optional<domain_error> sandbox_manager::set_network(const std::shared_ptr<sandbox_entry>& s,
                                                         const json& value) {
  domain_error err;
  auto wanted = network_from(value, err);
  if (!wanted) return err;
  if (s->unsandboxed || !s->box) return domain_error{fault::conflict, "A host sandbox has no network policy"};
  // Until egress is first opened, lo is as the sandbox started ("none":
  // down): only egress, which brings lo up, changes the mode then.
  const bool opening = sb::egress_on(*wanted) && !s->egress_opened;
  if (!s->egress_opened && !opening && wanted->mode != s->network.mode)
    return domain_error{fault::conflict, "The sandbox's network is \"" +
                                             std::string(sb::to_string(s->network.mode)) +
                                             "\" and has never had egress: it can change to \"allow\" or "
                                             "\"open\", not to \"" +
                                             std::string(sb::to_string(wanted->mode)) + "\""};
  const auto before = s->network;
  s->network = *wanted;
  s->egress_opened = s->egress_opened || opening;
  // The proxy has the policy and the sandbox's socket before the sandbox
  // listens on it; a sandbox not ready yet gets them once it is (see create).
  if (s->root_pid > 0) {
    if (auto error = start_egress(*s); !error.empty() && opening) {
      s->network = before;
      s->egress_opened = false;
      stop_egress(s->id);
      return domain_error{fault::internal, "Egress cannot be opened for this sandbox: " + error};
    }
  }
  persist(*s);
  if (opening) open_egress(s, before);
  return std::nullopt;
}

void sandbox_manager::open_egress(const std::shared_ptr<sandbox_entry>& s, const sb::network_policy& before) {
  // The supervisor handles requests in order: a command started after this
  // PATCH answered finds 127.0.0.1:3128 listening and gets the variables.
  s->box->open_egress([this, weak = std::weak_ptr<sandbox_entry>(s), before](const std::string& error) {
    auto box = weak.lock();
    if (error.empty() || !box || !sandboxes_.count(box->id)) return;
    // Egress fails closed: the policy goes back to what the sandbox had.
    log::error("sandbox_egress_not_opened", {{"sandbox_id", box->id}, {"error", error}});
    box->network = before;
    box->egress_opened = false;
    persist(*box);
    stop_egress(box->id);
  });
  // Running kernels get the same variables, by a silent execute queued
  // before anything a client sends after this PATCH. The policy's and the
  // creator's own values win, as they do for spawns.
  auto env = sb::egress_proxy_env();
  json policy_set = json::object();
  if (auto it = default_policy_.find("env"); it != default_policy_.end() && it->is_object())
    policy_set = it->value("set", json::object());
  std::erase_if(env, [&](const auto& kv) {
    return s->env.contains(kv.first) || (policy_set.is_object() && policy_set.contains(kv.first));
  });
  if (!kernel_env_setter_ || env.empty()) return;
  for (const auto& kernel_id : s->kernels)
    kernel_env_setter_(kernel_id, env, [kernel_id, id = s->id](const std::string& error) {
      if (!error.empty())
        log::warn("kernel_egress_env_not_set",
                  {{"sandbox_id", id}, {"kernel_id", kernel_id}, {"error", error}});
    });
}

egress_proxy& sandbox_manager::egress() {
  if (!egress_) {
    std::error_code ec;
    std::filesystem::create_directories(cfg_.state_dir / "logs", ec);  // its stderr goes there
    egress_ = std::make_unique<egress_proxy>(io_, exe_dir_ / "sandgate-egress", cfg_.egress_hosts_file,
                                             cfg_.egress_resolver, cfg_.state_dir / "logs" / "egress.log");
    egress_->on_connection([this](const json& event) { on_egress_connection(event); });
    egress_->start();
  }
  return *egress_;
}

std::string sandbox_manager::start_egress(const sandbox_entry& s) {
  // A sandbox that had egress keeps its socket served: narrowed to "none"
  // later, the proxy still answers it (and refuses) rather than nothing.
  if (s.unsandboxed || !s.box || !s.egress_opened) return "";
  auto& proxy = egress();
  sandboxing::unique_fd listener;
  if (!proxy.has_listener(s.id)) {
    std::string error;
    listener = s.box->copy_egress_listener(error);
    if (!listener) {
      log::error("sandbox_egress_unserved", {{"sandbox_id", s.id}, {"error", error}});
      return error;
    }
  }
  proxy.set(s.id, s.owner, std::move(listener), sb::to_json(s.network));
  return "";
}

void sandbox_manager::stop_egress(const std::string& id) {
  if (egress_) egress_->remove(id);
}

void sandbox_manager::on_egress_connection(const json& event) {
  auto& m = gateway_metrics();
  const std::string verdict = event.value("verdict", "refused");
  ++m.egress_connections[verdict];
  m.egress_bytes_up += event.value("bytes_up", std::uint64_t{0});
  m.egress_bytes_down += event.value("bytes_down", std::uint64_t{0});
  if (!audit_) return;
  // The proxy knows the sandbox by the socket a connection came in on; the
  // principal is the gateway's record of it, not what the proxy echoes.
  const auto s = find(event.value("sandbox_id", ""));
  const std::optional<std::string> principal =
      s ? std::optional<std::string>(s->owner) : std::optional<std::string>(std::nullopt);
  audit_->record("egress." + verdict, principal,
                 {{"sandbox_id", event.value("sandbox_id", "")},
                  {"method", event.value("method", "")},
                  {"host", event.value("host", "")},
                  {"port", event.value("port", 0)},
                  {"server_name", event.value("server_name", "")},
                  {"address", event.value("address", "")},
                  {"bytes_sent", event.value("bytes_up", std::uint64_t{0})},
                  {"bytes_received", event.value("bytes_down", std::uint64_t{0})},
                  {"duration_ms", event.value("duration_ms", std::int64_t{0})},
                  {"verdict", verdict},
                  {"reason", event.value("reason", "")}});
}

}  // namespace sandgate::gateway
