// The HAProxy agent-check port: the line for each capacity, and what a
// client connecting to the port reads.

#include "cluster/agent_check.hpp"

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>

#include <string>
#include <thread>

namespace {
namespace sg = sandgate::gateway;
namespace net = boost::asio;
using tcp = net::ip::tcp;

TEST(capacity_report, weight_from_free_slots_drain_when_full_or_draining) {
  EXPECT_EQ(sg::capacity_report(64, 64, false), "ready 100%\n");
  EXPECT_EQ(sg::capacity_report(16, 64, false), "ready 25%\n");
  EXPECT_EQ(sg::capacity_report(1, 1000, false), "ready 1%\n");  // never 0%: that is drain's job
  EXPECT_EQ(sg::capacity_report(0, 64, false), "drain\n");
  EXPECT_EQ(sg::capacity_report(64, 64, true), "drain\n");
}

TEST(agent_check, each_connection_reads_the_current_line) {
  net::io_context io;
  std::string line = "ready 100%\n";
  sg::agent_check agent(io, {net::ip::make_address("127.0.0.1"), 0}, [&] { return line; });
  auto read_line = [&] {
    std::string got;
    std::thread client([&] {
      net::io_context cio;
      tcp::socket s(cio);
      s.connect({net::ip::make_address("127.0.0.1"), agent.port()});
      boost::system::error_code ec;
      char buf[64];
      for (;;) {
        const auto n = s.read_some(net::buffer(buf), ec);
        got.append(buf, n);
        if (ec) break;  // the agent closes after its line
      }
      net::post(io, [&] { io.stop(); });
    });
    io.restart();
    io.run();
    client.join();
    return got;
  };
  EXPECT_EQ(read_line(), "ready 100%\n");
  line = "drain\n";
  EXPECT_EQ(read_line(), "drain\n");
}

}  // namespace
