#pragma once
// The gateway's configuration. Every option can come from the command line,
// from the environment (SANDGATE_<NAME>), or from a JSON config file
// (--config), in that order of precedence. Limits carry their unit.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sandgate::gateway {

struct config {
  std::string ip = "127.0.0.1";
  std::uint16_t port = 8888;
  std::optional<std::string> auth_token;  // unset: generate one; "" (explicit): auth off on loopback
  std::filesystem::path state_dir = ".sandgate";
  std::string default_kernel;  // empty: "python" if present, else the first spec
  std::size_t max_kernels = 64;
  std::string allow_origin;  // CORS; empty: same-origin only
  // Ports of sandboxes are reached at {port}-{sandbox id}.{ports_domain} (a
  // name that resolves to the gateway, e.g. a wildcard DNS record; browsers
  // resolve *.localhost to loopback themselves); "" turns that route off.
  std::string ports_domain = "localhost";
  std::string base_url = "/";
  std::filesystem::path certfile;
  std::filesystem::path keyfile;
  std::vector<std::filesystem::path> kernel_paths;  // extra kernelspec dirs
  std::filesystem::path tokens_file;  // principals and quotas by token digest; empty: only --auth-token
  std::filesystem::path policy_file;  // default sandbox policy; empty: the installed default.json
  std::vector<std::string> unsandboxed_kernels;  // kernelspecs the operator lets run outside a sandbox
  // Variables a POST /api/kernels `env` may set besides KERNEL_* (as Kernel
  // Gateway's env_whitelist; "*" lets every one through). Others are dropped.
  std::vector<std::string> kernel_env_allow;
  std::uint16_t node_id = 0;
  // Host-wide locks of the host id slots in use (see host_id_slots.hpp):
  // every gateway on a host must use the same directory.
  std::filesystem::path host_id_lock_dir = "/run/sandgate/host-ids";
  // The other nodes of a cluster, for lists that span it: "N=URL[,N=URL]"
  // and/or a file of "N URL" lines (read again when it changes).
  std::string peers;
  std::filesystem::path peers_file;
  unsigned peer_timeout_ms = 500;      // a peer that has not answered a list by then is left out
  std::uint16_t agent_check_port = 0;  // HAProxy agent-check (free capacity) on --ip; 0: none
  std::string log_level = "info";
  // The egress proxy resolves names from this hosts file only (tests); empty: getaddrinfo.
  std::filesystem::path egress_hosts_file;
  // The DNS server the egress proxy asks ("ADDR:PORT", UDP); empty: the system's resolver.
  std::string egress_resolver;
  std::filesystem::path audit_log;  // JSON lines, 0600; empty: <state_dir>/audit.log
  // SIGTERM/SIGINT end sandboxed kernels too; by default they keep running
  // and the next gateway on this state dir re-attaches them.
  bool shutdown_kernels_on_exit = false;

  // Limits.
  std::size_t http_header_limit_bytes = 16 * 1024;
  std::size_t http_body_limit_bytes = 64 * 1024 * 1024;
  std::size_t ws_message_limit_bytes = 64 * 1024 * 1024;
  std::size_t client_queue_limit_bytes = 256 * 1024 * 1024;
  unsigned client_stall_timeout_s = 10;
  std::size_t replay_buffer_limit_bytes = 32 * 1024 * 1024;
  std::size_t iopub_journal_bytes = 8 * 1024 * 1024;  // per kernel, in its sandbox's run dir; 0: none
  // Kernel output held in memory, all kernels together; 0: an eighth of the
  // host's memory (output_budget::host_default_bytes()).
  std::size_t output_memory_limit_bytes = 0;
  // A kernel message larger than this is replaced by a note naming its size; 0: none.
  std::size_t max_message_bytes = 128 * 1024 * 1024;
  unsigned http_idle_timeout_s = 300;
  // A request head must be whole this long after its connection's accept
  // (and TLS handshake) or a later request's first byte, whatever trickles in.
  unsigned http_header_timeout_s = 20;
  unsigned handshake_timeout_s = 10;  // TLS, and a WebSocket's opening and closing handshakes
  // Client connections at once (HTTP and WebSocket), overall and from one
  // address (an IPv6 /64; 0: no such limit). The total is also held within
  // what the open-file limit leaves after the descriptors kept for kernels.
  std::size_t max_connections = 4096;
  std::size_t max_connections_per_address = 256;
  unsigned kernel_start_timeout_s = 60;
  unsigned kernel_shutdown_grace_s = 3;
  unsigned replay_retention_s = 600;
  unsigned max_kernel_restarts = 5;
  // A sandbox (implicit ones, made for one kernel, included) idle this long
  // is culled with its kernels; creators may ask for less. 0: never.
  std::uint64_t sandbox_idle_timeout_s = 0;

  // Warm pools: per kernelspec, how many fully started sandboxed kernels to
  // keep ready at least. Depth grows with the claim rate up to
  // pool_max_depth, within pool_memory_bytes for all pools together.
  std::map<std::string, unsigned> pools;
  unsigned pool_max_depth = 32;

  // The most kernels this gateway may hold at once: --max-kernels and the
  // pools at their deepest.
  [[nodiscard]] std::size_t most_kernels() const noexcept {
    return max_kernels + pools.size() * std::size_t{pool_max_depth};
  }
  std::uint64_t pool_memory_bytes = 4ull * 1024 * 1024 * 1024;
  std::vector<std::string> pool_preload;  // modules pool kernels import before they are claimed
};

// Thrown for bad options, with a message meant for the operator.
struct config_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses argv (and the environment and --config file). Returns nothing when
// --help or --version printed and the program should exit 0.
[[nodiscard]] std::optional<config> parse_config(int argc, char** argv,
                                                 const std::map<std::string, std::string>& env);

[[nodiscard]] std::string config_help();

}  // namespace sandgate::gateway
