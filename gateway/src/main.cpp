// sandgate: the gateway executable. Parses the configuration, opens the
// registry and takes back what an earlier gateway left running, serves the
// API until SIGTERM or SIGINT, then stops accepting and exits, leaving
// sandboxed kernels running (or ending them: --shutdown-kernels-on-exit).
#include "api/router.hpp"
#include "audit/audit_log.hpp"
#include "auth/authenticator.hpp"
#include "cluster/agent_check.hpp"
#include "cluster/peer_directory.hpp"
#include "http/descriptor_budget.hpp"
#include "http/server.hpp"
#include "http/streams.hpp"
#include "http/ws_session.hpp"
#include "kernels/kernel_manager.hpp"
#include "registry/registry.hpp"

#include <gateway/config.hpp>
#include <gateway/kernelspec.hpp>
#include <gateway/log.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <sys/resource.h>
#include <unistd.h>
#include <csignal>
#include <ctime>
#include <functional>
#include <iostream>

extern char** environ;

namespace sg = sandgate::gateway;
namespace fs = std::filesystem;

namespace {

std::map<std::string, std::string> environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string_view::npos) env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return env;
}

bool is_loopback(const boost::asio::ip::address& a) {
  return a.is_loopback();
}

sg::log::level parse_level(const std::string& s) {
  if (s == "debug") return sg::log::level::debug;
  if (s == "warn") return sg::log::level::warn;
  if (s == "error") return sg::log::level::error;
  return sg::log::level::info;
}

// A gateway holds about 14 descriptors for each kernel (its ZeroMQ sockets
// and their mailboxes, the pinned socket files, the sandbox's control socket
// and process descriptor): the soft limit, often 1024, goes up to the hard
// one, and a limit that still cannot hold --max-kernels is said at start.
// Returns how the limit is shared between kernels and clients.
sg::descriptor_budget raise_open_file_limit(const sg::config& cfg) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) lim.rlim_cur = lim.rlim_max = RLIM_INFINITY;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised{lim.rlim_max, lim.rlim_max};
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  const auto budget = sg::share_descriptors(lim.rlim_cur, cfg.most_kernels());
  if (!budget.holds_reserve())
    sg::log::warn("open_file_limit_low", {{"limit", std::to_string(lim.rlim_cur)},
                                          {"needed", std::to_string(budget.reserved)},
                                          {"kernels_that_fit", std::to_string(budget.kernels_that_fit())}});
  return budget;
}

int run(sg::config cfg) {
  sg::log::set_min_level(parse_level(cfg.log_level));
  const auto address = boost::asio::ip::make_address(cfg.ip == "localhost" ? "127.0.0.1" : cfg.ip);
  std::string token;
  if (!cfg.auth_token) {
    token = sg::generate_token();
  } else if (cfg.auth_token->empty()) {
    if (!is_loopback(address)) throw sg::config_error("auth can be turned off only on a loopback address");
  } else {
    token = *cfg.auth_token;
  }
  fs::create_directories(cfg.state_dir);
  fs::permissions(cfg.state_dir, fs::perms::owner_all);
  cfg.state_dir = fs::canonical(cfg.state_dir);

  std::unique_ptr<sg::peer_directory> peers;
  try {
    peers = std::make_unique<sg::peer_directory>(cfg.node_id, cfg.peers, cfg.peers_file);
  } catch (const std::invalid_argument& e) {
    throw sg::config_error(e.what());
  }

  const auto descriptors = raise_open_file_limit(cfg);
  boost::asio::io_context io{1};
  const fs::path exe_dir = fs::read_symlink("/proc/self/exe").parent_path();
  sg::kernelspec_catalog specs(sg::kernelspec_catalog::default_dirs(cfg.kernel_paths, exe_dir));
  auto registry = sg::registry::open(cfg.state_dir / "registry.db");
  if (!registry->notice().empty()) {
    if (registry->notice().rfind("created", 0) == 0)
      sg::log::info("registry_created", {{"path", (cfg.state_dir / "registry.db").string()}});
    else
      sg::log::error("registry_replaced", {{"why", registry->notice()}});
  }
  registry->purge_ended(static_cast<std::int64_t>(std::time(nullptr)) - 3600);
  if (cfg.audit_log.empty()) cfg.audit_log = cfg.state_dir / "audit.log";
  sg::audit_log audit(cfg.audit_log);  // outlives the kernels and the router
  sg::kernel_manager kernels(io, cfg, specs, exe_dir, *registry);
  kernels.sandboxes().set_audit(&audit);
  kernels.restore();
  kernels.fill_pools();
  sg::router router(cfg, kernels, *registry, token, audit,
                    exe_dir / ".." / "share" / "sandgate" / "openapi.json", *peers);
  sg::http_limits limits;
  limits.header_bytes = cfg.http_header_limit_bytes;
  limits.body_bytes = cfg.http_body_limit_bytes;
  limits.idle = std::chrono::seconds(cfg.http_idle_timeout_s);
  limits.header_timeout = std::chrono::seconds(cfg.http_header_timeout_s);
  limits.tls_handshake_timeout = std::chrono::seconds(cfg.handshake_timeout_s);
  limits.ws.handshake_timeout = std::chrono::seconds(cfg.handshake_timeout_s);
  limits.ws.message_bytes = cfg.ws_message_limit_bytes;
  limits.ws.queue_bytes = cfg.client_queue_limit_bytes;
  limits.ws.stall_timeout = std::chrono::seconds(cfg.client_stall_timeout_s);
  std::unique_ptr<boost::asio::ssl::context> tls;
  if (!cfg.certfile.empty()) tls = sg::make_tls_context(cfg.certfile, cfg.keyfile);
  const sg::connection_table::limits connections{sg::connection_cap(cfg.max_connections, descriptors),
                                                 cfg.max_connections_per_address};
  sg::log::info("connection_limits", {{"total", std::to_string(connections.total)},
                                      {"per_address", std::to_string(connections.per_address)},
                                      {"open_file_limit", std::to_string(descriptors.open_file_limit)},
                                      {"reserved_descriptors", std::to_string(descriptors.reserved)}});
  sg::server srv(io, {address, cfg.port}, router, limits, connections, kernels.memory(), tls.get());
  srv.run();
  std::unique_ptr<sg::agent_check> agent;
  if (cfg.agent_check_port != 0)
    agent = std::make_unique<sg::agent_check>(
        io, boost::asio::ip::tcp::endpoint{address, cfg.agent_check_port}, [&] {
          return sg::capacity_report(kernels.free_kernel_slots(), cfg.max_kernels, kernels.draining());
        });
  if (agent) sg::log::info("agent_check_listening", {{"port", std::to_string(agent->port())}});

  const std::string url = std::string(tls ? "https://" : "http://") +
                          (address.is_v6() ? "[" + cfg.ip + "]" : cfg.ip) + ":" + std::to_string(srv.port()) +
                          cfg.base_url;
  sg::log::info("listening", {{"url", url},
                              {"state_dir", cfg.state_dir.string()},
                              {"audit_log", cfg.audit_log.string()},
                              {"kernelspecs", std::to_string(specs.all().size())},
                              {"node", std::to_string(cfg.node_id)}});
  if (!cfg.auth_token)
    std::cout << "sandgate: token " << token << "\nsandgate: " << url << "?token=" << token << std::endl;
  else
    std::cout << "sandgate: " << url << std::endl;

  // SIGHUP: the audit log was rotated; write to a new file at its path.
  boost::asio::signal_set hangup(io, SIGHUP);
  std::function<void()> wait_hangup = [&] {
    hangup.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      audit.reopen();
      wait_hangup();
    });
  };
  wait_hangup();
  boost::asio::signal_set stop_signals(io, SIGINT, SIGTERM);
  boost::asio::steady_timer deadline(io);
  stop_signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    sg::log::info("stopping", {{"signal", std::to_string(sig)}});
    srv.stop();
    if (agent) agent->stop();
    hangup.cancel();
    deadline.expires_after(std::chrono::seconds(cfg.kernel_shutdown_grace_s * 2 + 2));
    deadline.async_wait([&](const boost::system::error_code& e) {
      if (!e) io.stop();
    });
    // Kernels are handled per policy; then the clients' close frames go out.
    auto stop_io = [&] { sg::when_closes_sent(io, std::chrono::seconds(2), [&] { io.stop(); }); };
    if (cfg.shutdown_kernels_on_exit)
      kernels.shutdown_all(stop_io);
    else
      kernels.leave_all_running(stop_io);
  });
  // A handler that throws is a bug to log, not a reason to end every
  // session: the loop goes on.
  for (;;) {
    try {
      io.run();
      break;
    } catch (const std::exception& e) {
      sg::log::error("handler_failed", {{"error", e.what()}});
    }
  }
  sg::log::info("stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  try {
    auto cfg = sg::parse_config(argc, argv, environment());
    if (!cfg) return 0;
    return run(std::move(*cfg));
  } catch (const sg::config_error& e) {
    std::cerr << "sandgate: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    sg::log::error("fatal", {{"error", e.what()}});
    return 1;
  }
}
