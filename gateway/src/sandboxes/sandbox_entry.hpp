#pragma once
// A sandbox as this gateway keeps it, and its registry record: what a later
// gateway needs to take it back (sandbox_manager::restore).

#include "../registry/registry.hpp"
#include "sandbox.hpp"

#include <sandboxing/network_policy.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <ctime>
#include <map>
#include <memory>
#include <set>
#include <string>

namespace sandgate::gateway {

// Now in unix seconds, the clock of sandbox_entry::expires_at.
[[nodiscard]] inline std::int64_t unix_now() {
  return static_cast<std::int64_t>(std::time(nullptr));
}

// The first whole second at least ttl_s from now: a deadline never comes
// sooner than asked (now rounded down would cut up to a second off).
[[nodiscard]] inline std::int64_t deadline_after(std::int64_t ttl_s) {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<std::int64_t>(now.tv_sec) + ttl_s + (now.tv_nsec > 0 ? 1 : 0);
}

// The limits of a sandbox's policy that the API shows and quotas count.
struct sandbox_limits {
  std::uint64_t memory_bytes = 0;
  double cpu = 0;
  std::uint64_t pids = 0;
  std::uint64_t workspace_bytes = 0;
};
// {"memory_bytes", "cpu", "pids", "workspace_bytes"}, as the API shows them
// and the registry record keeps them (nlohmann's to_json: `{"limits", s.limits}`).
void to_json(nlohmann::json& j, const sandbox_limits& l);

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
  bool egress_opened = false;              // had egress once: the proxy accepts on its 127.0.0.1:3128
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

// The registry record of a sandbox (JSON text).
[[nodiscard]] std::string to_record(const sandbox_entry& s);
// A sandbox from its registry row, without its box; throws
// (nlohmann::json::exception, sandboxing::policy_error) on a record this
// gateway cannot read.
[[nodiscard]] std::shared_ptr<sandbox_entry> from_record(const registry_row& row);

}  // namespace sandgate::gateway
