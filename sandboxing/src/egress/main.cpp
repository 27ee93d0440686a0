// sandgate-egress: the egress proxy of a gateway's sandboxes. It runs outside
// every sandbox, accepts on each sandbox's own socket on 127.0.0.1:3128 (in
// that sandbox's network namespace, handed over by the gateway), and relays
// HTTP and CONNECT requests that the sandbox's network policy allows. The gateway starts it, feeds it
// policies over --control-fd, and restarts it if it dies. See docs/policy.md ("Egress").
#include <signal.h>
#include <sys/prctl.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "control_channel.hpp"
#include "egress_server.hpp"
#include "name_resolver.hpp"

namespace {

constexpr const char* usage =
    "usage: sandgate-egress --control-fd N [--hosts-file FILE] [--resolver ADDR:PORT]\n"
    "  --hosts-file FILE     names from this hosts file (then from --resolver, if given)\n"
    "  --resolver ADDR:PORT  ask this DNS server (UDP) instead of the system's resolver\n";

}  // namespace

int main(int argc, char** argv) {
  namespace asio = boost::asio;
  namespace sb = sandgate::sandboxing;
  using namespace sandgate::egress;
  int control_fd = -1;
  std::string hosts_file;
  std::optional<boost::asio::ip::udp::endpoint> resolver;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help") {
      std::fputs(usage, stdout);
      return 0;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "sandgate-egress: %s needs a value\n%s", argv[i], usage);
      return 2;
    }
    if (arg == "--control-fd") {
      control_fd = std::atoi(argv[++i]);
    } else if (arg == "--hosts-file") {
      hosts_file = argv[++i];
    } else if (arg == "--resolver") {
      resolver = parse_resolver(argv[++i]);
      if (!resolver) {
        std::fprintf(stderr, "sandgate-egress: --resolver: not ADDR:PORT or [ADDR]:PORT: %s\n", argv[i]);
        return 2;
      }
    } else {
      std::fprintf(stderr, "sandgate-egress: unknown option %s\n%s", argv[i], usage);
      return 2;
    }
  }
  if (control_fd < 0) {
    std::fputs(usage, stderr);
    return 2;
  }
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the gateway
  ::signal(SIGPIPE, SIG_IGN);
  try {
    asio::io_context io(1);
    name_resolver names(io, hosts_file, resolver);
    std::unique_ptr<control_channel> control;
    egress_server server(io, names, [&](const nlohmann::json& event) { control->send(event); });
    auto stop = [&] {
      server.remove_all();
      io.stop();
    };
    control = std::make_unique<control_channel>(
        io, control_fd,
        [&](const nlohmann::json& m) {
          const std::string op = m.value("op", "");
          const std::string id = m.value("sandbox_id", "");
          if (op == "set") {
            std::string error;
            // Taken before anything can fail, so that descriptors stay paired with their frames.
            auto listener = m.value("listener", false) ? control->take_descriptor() : sb::unique_fd();
            try {
              if (m.value("listener", false) && !listener)
                throw std::runtime_error("the set says it carries a listener, and none came with it");
              error = server.set(id, m.value("principal", ""), std::move(listener),
                                 sb::parse_network_policy(m.at("policy"), "network"));
            } catch (const std::exception& e) {
              error = e.what();
            }
            control->send({{"event", "set"}, {"sandbox_id", id}, {"error", error}});
          } else if (op == "remove") {
            server.remove(id);
          }
        },
        stop);
    asio::signal_set signals(io, SIGTERM, SIGINT);
    signals.async_wait([&](const boost::system::error_code&, int) { stop(); });
    control->start();
    io.run();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sandgate-egress: %s\n", e.what());
    return 1;
  }
}
