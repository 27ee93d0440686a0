#pragma once
// The gateway's counters and histograms, rendered for GET /metrics in the
// Prometheus text format. Everything runs on the gateway's one thread, so
// plain integers suffice.

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace sandgate::gateway {

class histogram {
 public:
  void observe(std::chrono::steady_clock::duration d);
  // Lines for `name` (…_bucket, …_sum, …_count), in seconds.
  [[nodiscard]] std::string render(const std::string& name, const std::string& help) const;

 private:
  // Up to the longest execution a policy allows by default (600 s).
  static constexpr std::array<double, 17> bounds_s = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                                      2.5,   5,     10,   30,    60,   120, 300,  600};
  std::array<std::uint64_t, bounds_s.size()> buckets_{};
  std::uint64_t count_ = 0;
  double sum_s_ = 0;
};

struct metrics {
  std::uint64_t kernel_starts = 0;
  std::uint64_t kernel_start_failures = 0;
  histogram kernel_start_seconds;
  std::uint64_t executions = 0;
  histogram execution_seconds;
  std::uint64_t execution_timeouts = 0;
  std::uint64_t kernel_restarts_for_time = 0;
  std::uint64_t bytes_from_kernels = 0;
  std::uint64_t messages_from_kernels = 0;
  std::uint64_t output_holds = 0;             // a client behind held a kernel's output back
  std::uint64_t clients_too_slow = 0;         // WebSockets closed for falling behind
  std::uint64_t input_waits = 0;              // a client stopped reading until its kernel took its input
  std::uint64_t client_messages_refused = 0;  // answered with an error instead of sent to the kernel
  std::uint64_t output_budget_pauses = 0;     // a kernel paused for holding more than its share of the budget
  std::uint64_t messages_over_limit = 0;      // kernel messages replaced by a note naming their size
  std::uint64_t sandboxes_created = 0;
  std::map<std::string, std::uint64_t> sandboxes_ended;  // by reason
  std::uint64_t oom_kills = 0;
  std::uint64_t auth_failures = 0;
  std::uint64_t commands = 0;
  std::uint64_t command_timeouts = 0;
  std::map<std::string, std::uint64_t> egress_connections;  // by verdict: allowed, refused, closed
  std::uint64_t egress_bytes_up = 0;                        // sandboxes -> the outside
  std::uint64_t egress_bytes_down = 0;
  std::uint64_t egress_proxy_restarts = 0;
  // Client connections (http/server, http/connection_table).
  std::uint64_t connections_open = 0;               // a gauge
  std::uint64_t connections_limit = 0;              // in force: the configured one within the descriptors
  std::uint64_t connections_per_address_limit = 0;  // 0: none
  std::map<std::string, std::uint64_t> connections_refused;  // by reason: per_address, total, descriptors
  std::uint64_t connections_displaced = 0;  // waiting for a head, closed to make room for a new one
  std::map<std::string, std::uint64_t> connection_timeouts;  // by phase: request_head, tls_handshake, ...
  // Ports of sandboxes (api/ports_api, http/port_exchange).
  std::map<std::string, std::uint64_t> port_connections;  // by outcome: connected, refused, failed
  std::uint64_t port_requests = 0;                        // requests relayed to a port
};

// The gateway's one set of metrics.
metrics& gateway_metrics();

}  // namespace sandgate::gateway
