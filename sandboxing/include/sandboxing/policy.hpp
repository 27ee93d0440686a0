// The sandbox policy: limits, lifetime, network, environment, identity and
// extra mounts. Parsed from JSON (schema in docs/policy.md); every field has a
// secure default and unknown fields are refused. One parser, one set of
// defaults and one validator (library sandgate::sandbox_policy) for
// sandgate-sandbox and for the gateway, which builds each sandbox's policy
// with them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sandboxing/network_policy.hpp"
#include "sandboxing/policy_error.hpp"

namespace sandgate::sandboxing {

struct limits {
  std::uint64_t memory_bytes = 2ull << 30;     // cgroup memory (and memory+swap) limit
  double cpu = 1.0;                            // CPU quota in cores (cfs quota / cpu.max)
  std::uint32_t pids = 256;                    // cgroup pids.max, also RLIMIT_NPROC
  std::uint64_t workspace_bytes = 1ull << 30;  // size of the /workspace tmpfs
  std::uint64_t tmp_bytes = 256ull << 20;      // size of the /tmp tmpfs
  std::uint32_t open_files = 1024;             // RLIMIT_NOFILE
  std::uint64_t file_size_bytes = 1ull << 30;  // RLIMIT_FSIZE
};

struct bind_mount {
  std::string source;  // host path
  std::string target;  // absolute path inside the sandbox
  bool read_only = true;
};

struct environment {
  std::map<std::string, std::string> set;  // variables every program gets
  std::vector<std::string> pass;           // names taken from the caller's environment (standalone)
};

struct policy {
  struct limits limits;
  std::uint64_t ttl_s = 24ull * 3600;   // wall-clock lifetime of the sandbox
  std::uint64_t max_execution_s = 600;  // one execution's limit, enforced by the gateway
  network_policy network;               // what the sandbox gets
  // The most a creator may ask for (the gateway enforces it); absent: `network`.
  network_policy network_ceiling;
  struct environment env;
  std::string hostname = "sandbox";
  std::vector<bind_mount> mounts;
  std::uint32_t uid = 1000;  // inside the sandbox
  std::uint32_t gid = 1000;
};

// Parses and validates a policy document; throws policy_error.
policy parse_policy(std::string_view json_text);
// Reads and parses a policy file; throws policy_error naming the path.
policy load_policy(const std::string& path);
// Checks the rules on an already built policy; throws policy_error.
void validate(const policy& p);
// The policy as JSON text (all fields, defaults included).
std::string to_json_text(const policy& p);

}  // namespace sandgate::sandboxing
