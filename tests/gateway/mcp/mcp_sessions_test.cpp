// The MCP server's sessions are bounded: a principal keeps its most recent
// ones, the least recently used gives way, and sessions are the principal's own.
#include "mcp/mcp_server.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace sandgate::gateway {
namespace {

namespace http = boost::beast::http;

mcp_server::response post(mcp_server& s, const std::string& principal, const std::string& body,
                          const std::string& session = "") {
  mcp_server::request req{http::verb::post, "/mcp", 11};
  req.set(http::field::content_type, "application/json");
  if (!session.empty()) req.set("Mcp-Session-Id", session);
  req.body() = body;
  mcp_server::response out;
  // Neither initialize nor ping calls the REST API.
  s.handle(
      req, principal,
      [](mcp_server::api_request, const std::function<void(mcp_server::response)>&) {
        ADD_FAILURE() << "the REST API was called";
      },
      [&](mcp_server::response r) { out = std::move(r); });
  return out;
}

std::string initialize(mcp_server& s, const std::string& principal) {
  auto r =
      post(s, principal,
           R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})");
  EXPECT_EQ(r.result(), http::status::ok);
  return std::string(r["Mcp-Session-Id"]);
}

unsigned ping(mcp_server& s, const std::string& principal, const std::string& session) {
  return post(s, principal, R"({"jsonrpc":"2.0","id":1,"method":"ping"})", session).result_int();
}

TEST(mcp_sessions, the_least_recently_used_gives_way_at_the_cap) {
  mcp_server s(2);
  const auto first = initialize(s, "alice");
  const auto second = initialize(s, "alice");
  EXPECT_EQ(ping(s, "alice", first), 200u);  // first is now the more recently used
  const auto bob = initialize(s, "bob");     // another principal's count is its own
  const auto third = initialize(s, "alice");
  EXPECT_EQ(s.session_count(), 3u);
  EXPECT_EQ(ping(s, "alice", second), 404u);
  EXPECT_EQ(ping(s, "alice", first), 200u);
  EXPECT_EQ(ping(s, "alice", third), 200u);
  EXPECT_EQ(ping(s, "bob", bob), 200u);
  EXPECT_EQ(ping(s, "bob", first), 404u);  // alice's session is not bob's
}

TEST(mcp_sessions, an_idle_session_ends) {
  mcp_server s(10, std::chrono::seconds(0));
  const auto old = initialize(s, "alice");
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // past a 0 s idle limit
  initialize(s, "alice");                                     // a start sweeps the idle ones
  EXPECT_EQ(ping(s, "alice", old), 404u);
  EXPECT_EQ(s.session_count(), 1u);
}

}  // namespace
}  // namespace sandgate::gateway
