#pragma once
// The sandboxes of this gateway. A sandbox is made explicitly (POST
// /api/sandboxes, several kernels and commands share it) or implicitly for
// one kernel of the Kernel Gateway API (it ends with that kernel). Each gets
// a policy of its own: the operator's default policy with the creator's
// settings, which may lower but never raise the default's limits.

#include "../audit/audit_log.hpp"
#include "../registry/registry.hpp"
#include "domain_error.hpp"
#include "egress_proxy.hpp"
#include "host_id_slots.hpp"
#include "sandbox.hpp"

#include <sandboxing/network_policy.hpp>

#include <gateway/config.hpp>
#include <gateway/kernelspec.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::gateway {

// [A-Za-z_][A-Za-z0-9_]*: a portable environment variable name.
[[nodiscard]] bool is_env_name(std::string_view name);
// KERNEL_*: what Jupyter clients send about who and where (user name,
// working directory); always accepted from a kernel start request.
[[nodiscard]] inline bool is_kernel_variable(std::string_view name) {
  return name.starts_with("KERNEL_");
}

struct sandbox_limits {
  std::uint64_t memory_bytes = 0;
  double cpu = 0;
  std::uint64_t pids = 0;
  std::uint64_t workspace_bytes = 0;
};

// What a creator may choose; anything unset takes the default policy's value.
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

  // From a POST /api/sandboxes body; nullopt with `error` set when invalid.
  static std::optional<sandbox_settings> from_json(const nlohmann::json& body, std::string& error);
};

struct sandbox_entry {
  std::string id;
  std::string owner;
  bool implicit = false;  // made for one kernel; ends with it
  bool pooled = false;    // a warm pool's, owned by no one yet: unlisted, never culled
  std::chrono::system_clock::time_point created;
  std::int64_t expires_at = 0;       // unix seconds
  std::uint64_t idle_timeout_s = 0;  // 0: never culled
  std::uint64_t max_execution_s = 0;
  std::map<std::string, std::string> metadata;
  sandbox_limits limits;
  sandboxing::network_policy network;      // in force (PATCH changes it)
  bool egress_forwarder = false;           // started with egress: its supervisor forwards to the proxy
  std::map<std::string, std::string> env;  // for every kernel and command inside
  // Kernel program directories outside the system dirs (a build tree, maybe
  // under /tmp), bound read-only elsewhere inside: host path -> inside path.
  std::map<std::string, std::string> program_dirs;
  bool unsandboxed = false;  // a host "sandbox" (an operator's exempted kernelspecs)
  int root_pid = 0;          // the supervisor's host pid, once ready
  std::shared_ptr<sandbox> box;
  std::set<std::string> kernels;
  unsigned commands_running = 0;
  std::chrono::steady_clock::time_point last_activity;
  std::chrono::system_clock::time_point last_activity_wall;
  unsigned slot = 0;

  void touch();
};

class sandbox_manager {
 public:
  // Told when a sandbox ends by itself or is culled; `reason` is "expired",
  // "culled" or "ended".
  using end_listener = std::function<void(const std::shared_ptr<sandbox_entry>&, const std::string& reason)>;
  // Asked whether a sandbox's kernels are all idle (for culling).
  using idle_probe = std::function<bool(const sandbox_entry&)>;

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
  void detach_all();

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
  // (and of `also_ids`, its kernels) answer `reason` for a while.
  void destroy(const std::string& id, const std::string& reason);
  void extend(const std::shared_ptr<sandbox_entry>& s, std::uint64_t ttl_s,
              std::function<void(std::optional<domain_error>)> done);
  // Why an id that no longer exists went away ("expired", "culled",
  // "deleted"), or nothing when it is unknown.
  [[nodiscard]] std::optional<std::string> gone(const std::string& id) const;
  void remember_gone(const std::string& id, const std::string& reason);

  [[nodiscard]] std::uint64_t max_ttl_s() const noexcept { return max_ttl_s_; }
  // The default policy's limits (also the most a creator may ask for).
  [[nodiscard]] sandbox_limits default_limits() const;

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
  std::filesystem::path write_policy(const std::string& id, const sandbox_settings& settings,
                                     sandbox_entry& entry, domain_error& err);
  static std::optional<unsigned> slot_of_peer(int socket_fd);
  void persist(const sandbox_entry& s);
  void watch_end(const std::shared_ptr<sandbox_entry>& s);
  void remove_orphans(const std::set<std::string>& known);
  void sweep();
  void end(const std::string& id, const std::string& reason);
  // sandbox_network.cpp: tells the proxy (started on first use) the sandbox's policy, or forgets it.
  void start_egress(const sandbox_entry& s);
  void stop_egress(const std::string& id);
  // The gateway's egress proxy, started now if it is not running yet.
  egress_proxy& egress();
  // A PATCH gives egress to a sandbox that started without: its supervisor
  // starts the forwarder, its running kernels get the proxy variables.
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
  std::filesystem::path policy_file_;
  nlohmann::json default_policy_;
  std::uint64_t max_ttl_s_ = 0;
  sandboxing::network_policy network_default_;  // the operator's policy's network
  sandboxing::network_policy network_ceiling_;  // and the most a creator may ask for
  std::unique_ptr<egress_proxy> egress_;
  std::map<std::string, std::shared_ptr<sandbox_entry>> sandboxes_;
  host_id_slots slots_;
  std::map<std::string, std::pair<std::string, std::chrono::steady_clock::time_point>> gone_;
  std::deque<std::string> gone_order_;
  boost::asio::steady_timer sweep_timer_;
  end_listener end_listener_;
  idle_probe idle_probe_;
  audit_log* audit_ = nullptr;
};

}  // namespace sandgate::gateway
