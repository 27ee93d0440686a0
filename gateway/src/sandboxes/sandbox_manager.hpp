#pragma once
// The sandboxes of this gateway and their lifecycle. A sandbox is made
// explicitly (POST /api/sandboxes, several kernels and commands share it) or
// implicitly for one kernel of the Kernel Gateway API (it ends with that
// kernel). Each gets a policy of its own (sandbox_policy_builder: the
// operator's policy with the creator's settings, which may lower but never
// raise its limits), a host id slot (host_id_slots) and a registry record
// (sandbox_entry); the ids that went away are remembered (gone_ids).
// sandbox_manager.cpp: create, claim, extend, destroy. sandbox_ends.cpp: the
// ends nobody asked for (the supervisor's end, the TTL, idle culling: a
// one-second sweep). sandbox_restore.cpp: taking sandboxes back after a
// restart, orphans. sandbox_network.cpp: their network and the egress proxy.

#include "../audit/audit_log.hpp"
#include "../registry/registry.hpp"
#include "../util/domain_error.hpp"
#include "egress_proxy.hpp"
#include "host_id_slots.hpp"
#include "sandbox.hpp"
#include "sandbox_entry.hpp"
#include "sandbox_gone_ids.hpp"
#include "sandbox_policy_builder.hpp"
#include "sandbox_settings.hpp"

#include <sandboxing/network_policy.hpp>

#include <gateway/config.hpp>
#include <gateway/kernelspec.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sandgate::gateway {

class sandbox_manager {
 public:
  // Told when a sandbox ends by itself or is culled; `reason` is "expired",
  // "culled" or "ended".
  using end_listener = std::function<void(const std::shared_ptr<sandbox_entry>&, const std::string& reason)>;
  // Asked whether a sandbox's kernels are all idle (for culling).
  using idle_probe = std::function<bool(const sandbox_entry&)>;

  // Reads the operator's policy (cfg.policy_file, else the installed
  // default.json): throws config_error naming the file and the field when it
  // cannot be read or breaks a rule.
  sandbox_manager(boost::asio::io_context& io, const config& cfg, kernelspec_catalog& specs,
                  std::filesystem::path exe_dir, registry& reg);
  ~sandbox_manager();

  // Takes back the sandboxes the registry lists as live: each supervised one
  // is re-attached in the background (if its supervisor does not answer it
  // ends like any sandbox that ends by itself); host ones could not outlive
  // the gateway and are ended as "lost". Then removes what is left of
  // sandboxes that no record explains and no supervisor runs (run dirs,
  // control sockets, policies); a live supervisor that no record explains
  // is logged and left alone. Returns the sandboxes being re-attached.
  std::vector<std::shared_ptr<sandbox_entry>> restore();
  // Leaves every supervised sandbox running for the next gateway and
  // forgets it here (not in the registry).
  void leave_all_running();

  void on_sandbox_end(end_listener listener) { end_listener_ = std::move(listener); }
  void set_idle_probe(idle_probe probe) { idle_probe_ = std::move(probe); }
  // Where the ends nobody asked for (expired, culled, ended) are recorded.
  void set_audit(audit_log* log) noexcept { audit_ = log; }

  // Starts a sandbox; its supervisor becomes ready in the background (spawns
  // wait for it). nullptr with `err` set when the settings break the policy.
  std::shared_ptr<sandbox_entry> create(const sandbox_settings& settings, const std::string& owner,
                                        bool implicit, bool unsandboxed, domain_error& err,
                                        bool pooled = false);
  // A pooled sandbox becomes `owner`'s, with the creator's idle timeout and
  // metadata (its limits are the default policy's); the caller then sets its
  // TTL from now with extend(). nullopt, or the error the settings break.
  std::optional<domain_error> claim(sandbox_entry& s, const sandbox_settings& settings,
                                    const std::string& owner, bool implicit);
  // Settings a pooled sandbox already satisfies: nothing about its limits,
  // network or environment differs from the default policy.
  [[nodiscard]] static bool poolable(const sandbox_settings& settings);
  // Calls `done` once the sandbox's supervisor answers (or failed to start).
  void when_ready(const std::shared_ptr<sandbox_entry>& s, std::function<void(std::string error)> done);
  [[nodiscard]] std::shared_ptr<sandbox_entry> find(const std::string& id) const;
  // Every sandbox but the warm pools' (those are nobody's yet).
  [[nodiscard]] std::vector<std::shared_ptr<sandbox_entry>> list() const;
  // Kills everything inside and forgets the sandbox; later lookups of its id
  // (and of its kernels' ids) answer `reason` for a while.
  void destroy(const std::string& id, const std::string& reason);
  void extend(const std::shared_ptr<sandbox_entry>& s, std::uint64_t ttl_s,
              std::function<void(std::optional<domain_error>)> done);
  // Why an id that no longer exists went away ("expired", "culled",
  // "deleted"), or nothing when it is unknown.
  [[nodiscard]] std::optional<std::string> gone(const std::string& id) const { return gone_.find(id); }
  void remember_gone(const std::string& id, const std::string& reason) { gone_.remember(id, reason); }

  [[nodiscard]] std::uint64_t max_ttl_s() const noexcept { return policies_.max_ttl_s(); }
  // The default policy's limits (also the most a creator may ask for).
  [[nodiscard]] sandbox_limits default_limits() const { return policies_.default_limits(); }

  // sandbox_network.cpp
  // A network value from a creator (a JSON mode or object, or KERNEL_NETWORK's
  // text), checked against the operator's ceiling: invalid is fault::invalid,
  // above the ceiling fault::forbidden naming the host, cidr or port.
  [[nodiscard]] std::optional<sandboxing::network_policy> network_from(const nlohmann::json& value,
                                                                       domain_error& err) const;
  [[nodiscard]] static nlohmann::json network_text_value(const std::string& text);
  // PATCH .../network: the new policy for new connections at once; open ones
  // it no longer allows are closed. nullopt, or the error.
  std::optional<domain_error> set_network(const std::shared_ptr<sandbox_entry>& s,
                                          const nlohmann::json& value);
  // The egress proxy's reports: audit lines and metrics.
  void on_egress_connection(const nlohmann::json& event);
  // Sets variables in one running kernel (kernel::apply_env), for egress
  // that a PATCH opens while kernels run; the kernel manager provides it.
  using kernel_env_setter =
      std::function<void(const std::string& kernel_id, const std::map<std::string, std::string>& env,
                         std::function<void(std::string error)> done)>;
  void set_kernel_env_setter(kernel_env_setter setter) { kernel_env_setter_ = std::move(setter); }

 private:
  // Builds the sandbox's policy, writes it and sets what the entry keeps of
  // it (limits, expiry, execution limit, network, program dirs); false with
  // `err` set when the settings break the operator's policy.
  bool write_policy(const sandbox_settings& settings, sandbox_entry& entry, domain_error& err);
  void persist(const sandbox_entry& s);
  void watch_end(const std::shared_ptr<sandbox_entry>& s);
  void remove_orphans(const std::set<std::string>& known);
  void sweep();
  void end(const std::string& id, const std::string& reason);
  // sandbox_network.cpp: tells the proxy (started on first use) the sandbox's policy, or forgets it.
  // Gives the proxy the sandbox's policy (and, the first time, a copy of its
  // socket on 127.0.0.1:3128); returns why it could not, or "".
  std::string start_egress(const sandbox_entry& s);
  void stop_egress(const std::string& id);
  // The gateway's egress proxy, started now if it is not running yet.
  egress_proxy& egress();
  // A PATCH gives egress to a sandbox that started without: its supervisor
  // listens on 127.0.0.1:3128, its running kernels get the proxy variables.
  void open_egress(const std::shared_ptr<sandbox_entry>& s, const sandboxing::network_policy& before);
  void load_network_defaults();
  kernel_env_setter kernel_env_setter_;
  // The creator's idle timeout, within the operator's; false with `err` set.
  bool set_idle_timeout(sandbox_entry& s, const sandbox_settings& settings, domain_error& err) const;

  boost::asio::io_context& io_;
  const config& cfg_;
  kernelspec_catalog& specs_;
  std::filesystem::path exe_dir_;
  registry& registry_;
  std::filesystem::path policy_file_;  // the operator's
  sandbox_policy_builder policies_;    // read from it once, at construction
  // The operator's policy as JSON, defaults filled in (sandboxing::to_json_text
  // of policies_'s): where load_network_defaults reads the network and its ceiling.
  nlohmann::json default_policy_;
  sandboxing::network_policy network_default_;  // the operator's policy's network
  sandboxing::network_policy network_ceiling_;  // and the most a creator may ask for
  std::unique_ptr<egress_proxy> egress_;
  std::map<std::string, std::shared_ptr<sandbox_entry>> sandboxes_;
  host_id_slots slots_;
  gone_ids gone_;
  boost::asio::steady_timer sweep_timer_;
  end_listener end_listener_;
  idle_probe idle_probe_;
  audit_log* audit_ = nullptr;
};

}  // namespace sandgate::gateway
