// GET /metrics: the gateway's counters, gauges and histograms in the
// Prometheus text format.
#include "router.hpp"

#include "../util/metrics.hpp"

#include <map>
#include <string>

namespace sandgate::gateway {
namespace http = boost::beast::http;

void router::get_metrics(context& ctx) {
  const auto& m = gateway_metrics();
  std::string out;
  auto counter = [&out](const std::string& name, const std::string& help, std::uint64_t v,
                        const std::string& labels = "") {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " counter\n" + name + labels + " " +
           std::to_string(v) + "\n";
  };
  auto gauge = [&out](const std::string& name, const std::string& help) {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " gauge\n";
  };
  gauge("sandgate_sandboxes", "Sandboxes that exist now.");
  out += "sandgate_sandboxes " + std::to_string(kernels_.sandboxes().list().size()) + "\n";
  std::map<std::string, std::uint64_t> states = {
      {"starting", 0}, {"idle", 0}, {"busy", 0}, {"restarting", 0}};
  for (const auto& k : kernels_.list())
    ++states[k->execution_state()];
  gauge("sandgate_kernels", "Kernels that exist now, by execution state.");
  for (const auto& [state, n] : states)
    out += "sandgate_kernels{state=\"" + state + "\"} " + std::to_string(n) + "\n";
  counter("sandgate_kernel_starts_total", "Kernels started and ready.", m.kernel_starts);
  counter("sandgate_kernel_start_failures_total", "Kernels that failed to start.", m.kernel_start_failures);
  out += m.kernel_start_seconds.render("sandgate_kernel_start_seconds", "From POST to a ready kernel.");
  counter("sandgate_executions_total", "Executions ended, from any client.", m.executions);
  out += m.execution_seconds.render("sandgate_execution_seconds", "From execute_request to its end.");
  counter("sandgate_execution_timeouts_total", "Executions stopped at their time limit.",
          m.execution_timeouts);
  counter("sandgate_execution_restarts_total",
          "Kernels restarted because an execution ignored its interrupt.", m.kernel_restarts_for_time);
  counter("sandgate_relayed_bytes_total", "Bytes of kernel messages received and relayed.",
          m.bytes_from_kernels);
  counter("sandgate_relayed_messages_total", "Kernel messages received and relayed.",
          m.messages_from_kernels);
  counter("sandgate_output_holds_total",
          "Times a kernel's output was held back until a WebSocket client that fell behind caught up.",
          m.output_holds);
  counter("sandgate_clients_too_slow_total", "WebSockets closed for falling too far behind.",
          m.clients_too_slow);
  counter("sandgate_input_waits_total",
          "Times a WebSocket client stopped being read until its kernel's input queue had gone out.",
          m.input_waits);
  counter("sandgate_client_messages_refused_total",
          "Client messages answered with an error reply because the kernel's input queue was full.",
          m.client_messages_refused);
  gauge("sandgate_output_memory_bytes", "Kernel output held in the gateway's memory now.");
  out += "sandgate_output_memory_bytes " + std::to_string(kernels_.output().held_bytes()) + "\n";
  gauge("sandgate_output_memory_limit_bytes", "The budget for kernel output held in memory.");
  out += "sandgate_output_memory_limit_bytes " + std::to_string(kernels_.output().limit_bytes()) + "\n";
  counter("sandgate_output_budget_pauses_total",
          "Times a kernel's output was not read because it held more than its share of the output budget.",
          m.output_budget_pauses);
  counter("sandgate_messages_over_limit_total",
          "Kernel messages over --max-message-bytes, replaced by a note naming their size.",
          m.messages_over_limit);
  counter("sandgate_sandboxes_created_total", "Sandboxes created.", m.sandboxes_created);
  out +=
      "# HELP sandgate_sandboxes_ended_total Sandboxes ended, by reason.\n"
      "# TYPE sandgate_sandboxes_ended_total counter\n";
  for (const auto& [reason, n] : m.sandboxes_ended)
    out += "sandgate_sandboxes_ended_total{reason=\"" + reason + "\"} " + std::to_string(n) + "\n";
  const auto culled = m.sandboxes_ended.find("culled");
  counter("sandgate_culls_total", "Sandboxes ended by idle culling.",
          culled == m.sandboxes_ended.end() ? 0 : culled->second);
  counter("sandgate_oom_kills_total", "Processes killed by a sandbox's memory limit.", m.oom_kills);
  out +=
      "# HELP sandgate_egress_connections_total Connections through the egress proxy, by verdict.\n"
      "# TYPE sandgate_egress_connections_total counter\n";
  for (const char* verdict : {"allowed", "refused", "closed"}) {
    const auto it = m.egress_connections.find(verdict);
    out += std::string("sandgate_egress_connections_total{verdict=\"") + verdict + "\"} " +
           std::to_string(it == m.egress_connections.end() ? 0 : it->second) + "\n";
  }
  counter("sandgate_egress_bytes_sent_total", "Bytes sandboxes sent out through the egress proxy.",
          m.egress_bytes_up);
  counter("sandgate_egress_bytes_received_total", "Bytes sandboxes received through the egress proxy.",
          m.egress_bytes_down);
  counter("sandgate_egress_proxy_restarts_total", "Times the egress proxy ended and was started again.",
          m.egress_proxy_restarts);
  counter("sandgate_commands_total", "Commands run in sandboxes.", m.commands);
  counter("sandgate_command_timeouts_total", "Commands killed at their timeout.", m.command_timeouts);
  counter("sandgate_auth_failures_total", "Requests refused for a missing or wrong token.", m.auth_failures);
  gauge("sandgate_connections", "Client connections open now (HTTP and WebSocket).");
  out += "sandgate_connections " + std::to_string(m.connections_open) + "\n";
  gauge("sandgate_connections_limit",
        "The most client connections at once: --max-connections within what the open-file limit leaves.");
  out += "sandgate_connections_limit " + std::to_string(m.connections_limit) + "\n";
  gauge("sandgate_connections_per_address_limit",
        "The most client connections from one address (an IPv6 /64) at once; 0: none.");
  out += "sandgate_connections_per_address_limit " + std::to_string(m.connections_per_address_limit) + "\n";
  out +=
      "# HELP sandgate_connections_refused_total Connections closed as soon as accepted, by the limit they "
      "were over.\n"
      "# TYPE sandgate_connections_refused_total counter\n";
  for (const char* reason : {"per_address", "total", "descriptors"}) {
    const auto it = m.connections_refused.find(reason);
    out += std::string("sandgate_connections_refused_total{reason=\"") + reason + "\"} " +
           std::to_string(it == m.connections_refused.end() ? 0 : it->second) + "\n";
  }
  counter("sandgate_connections_displaced_total",
          "Connections waiting for a request head, closed to make room for a new one at the limit.",
          m.connections_displaced);
  out +=
      "# HELP sandgate_connection_timeouts_total Connections closed for not completing a request head or a "
      "handshake in time, by phase.\n"
      "# TYPE sandgate_connection_timeouts_total counter\n";
  for (const char* phase : {"request_head", "tls_handshake", "websocket_handshake"}) {
    const auto it = m.connection_timeouts.find(phase);
    out += std::string("sandgate_connection_timeouts_total{phase=\"") + phase + "\"} " +
           std::to_string(it == m.connection_timeouts.end() ? 0 : it->second) + "\n";
  }
  out +=
      "# HELP sandgate_port_connections_total Connections the gateway made to ports of sandboxes, by "
      "outcome.\n"
      "# TYPE sandgate_port_connections_total counter\n";
  for (const char* outcome : {"connected", "refused", "failed"}) {
    const auto it = m.port_connections.find(outcome);
    out += std::string("sandgate_port_connections_total{outcome=\"") + outcome + "\"} " +
           std::to_string(it == m.port_connections.end() ? 0 : it->second) + "\n";
  }
  counter("sandgate_port_requests_total", "Requests relayed to ports of sandboxes.", m.port_requests);
  const auto pools = kernels_.pool().statuses();
  auto per_pool = [&](const std::string& name, const std::string& type, const std::string& help, auto field) {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    for (const auto& [kernel_name, st] : pools)
      out += name + "{kernel=\"" + kernel_name + "\"} " + std::to_string(field(st)) + "\n";
  };
  using pool_status = kernel_pool::status;
  per_pool("sandgate_pool_ready", "gauge", "Warm pool kernels started and waiting to be claimed.",
           [](const pool_status& s) { return s.ready; });
  per_pool("sandgate_pool_starting", "gauge", "Warm pool kernels starting.",
           [](const pool_status& s) { return s.starting; });
  per_pool("sandgate_pool_target", "gauge", "Ready kernels the pool aims at now (adapts to the claim rate).",
           [](const pool_status& s) { return s.target; });
  per_pool("sandgate_pool_memory_bytes", "gauge", "Proportional set size of the ready kernels' sandboxes.",
           [](const pool_status& s) { return s.memory_bytes; });
  per_pool("sandgate_pool_claims_total", "counter", "Kernels and sandboxes served from the pool.",
           [](const pool_status& s) { return s.claims; });
  per_pool("sandgate_pool_misses_total", "counter", "Claims that found the pool empty and started cold.",
           [](const pool_status& s) { return s.misses; });
  per_pool("sandgate_pool_start_failures_total", "counter", "Pool kernels that failed to start.",
           [](const pool_status& s) { return s.failures; });
  per_pool("sandgate_pool_retired_total", "counter", "Pool kernels ended unclaimed (surplus, age, stop).",
           [](const pool_status& s) { return s.retired; });
  response res{http::status::ok, ctx.req.version()};
  res.set(http::field::server, "sandgate");
  res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
  res.keep_alive(ctx.req.keep_alive());
  res.body() = std::move(out);
  ctx.reply(std::move(res));
}

}  // namespace sandgate::gateway
