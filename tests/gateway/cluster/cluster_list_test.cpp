// Cluster lists against real HTTP servers on loopback (Beast, in a thread of
// their own): parts are merged without duplicates, a peer that hangs, refuses
// or answers with no list is left out and named, within the timeout, and
// the caller's credentials and the node-only scope reach the peers.

#include "cluster/cluster_list.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {
namespace sg = sandgate::gateway;
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using json = nlohmann::json;

// A server that answers each request with `answer(request)`, or, when that
// returns nothing, holds the connection without answering.
class fake_node {
 public:
  using handler = std::function<std::optional<http::response<http::string_body>>(
      const http::request<http::string_body>&)>;
  explicit fake_node(handler answer) : answer_(std::move(answer)) {
    acceptor_.open(tcp::v4());
    acceptor_.bind({net::ip::make_address("127.0.0.1"), 0});
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~fake_node() {
    net::post(io_, [this] {
      acceptor_.close();
      held_.clear();
    });
    io_.stop();
    thread_.join();
  }
  [[nodiscard]] sg::peer as_peer(std::uint16_t node) const {
    return sg::parse_peers(std::to_string(node) + "=http://127.0.0.1:" + std::to_string(port_)).at(0);
  }
  std::vector<http::request<http::string_body>> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void accept() {
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket s) {
      if (ec) return;
      auto stream = std::make_shared<beast::tcp_stream>(std::move(s));
      auto buffer = std::make_shared<beast::flat_buffer>();
      auto req = std::make_shared<http::request<http::string_body>>();
      http::async_read(*stream, *buffer, *req, [this, stream, buffer, req](beast::error_code e, std::size_t) {
        if (e) return;
        {
          std::lock_guard lock(mutex_);
          requests_.push_back(*req);
        }
        auto res = answer_(*req);
        if (!res) return held_.push_back(stream);
        auto out = std::make_shared<http::response<http::string_body>>(std::move(*res));
        out->prepare_payload();
        http::async_write(*stream, *out, [stream, out](beast::error_code, std::size_t) {});
      });
      accept();
    });
  }
  net::io_context io_;
  tcp::acceptor acceptor_{io_};
  unsigned short port_ = 0;
  handler answer_;
  std::vector<std::shared_ptr<beast::tcp_stream>> held_;
  std::mutex mutex_;
  std::vector<http::request<http::string_body>> requests_;
  std::thread thread_;
};

http::response<http::string_body> ok(const json& body) {
  http::response<http::string_body> res{http::status::ok, 11};
  res.body() = body.dump();
  return res;
}

TEST(append_new_items, keeps_the_first_of_each_id_and_skips_what_is_not_an_item) {
  json into = json::array({{{"id", "a"}, {"n", 1}}});
  sg::append_new_items(into, json::array({{{"id", "a"}, {"n", 2}}, {{"id", "b"}}, 7, {{"no_id", 1}}}));
  sg::append_new_items(into, json::object({{"id", "c"}}));  // not a list
  ASSERT_EQ(into.size(), 2u);
  EXPECT_EQ(into[0]["n"], 1);
  EXPECT_EQ(into[1]["id"], "b");
}

TEST(list_across, merges_every_part_and_names_the_peers_left_out) {
  fake_node two([](const auto&) { return ok(json::array({{{"id", "k2"}}, {{"id", "shared"}}})); });
  fake_node three([](const auto&) { return ok(json::array({{{"id", "k3"}}})); });
  fake_node hangs([](const auto&) { return std::nullopt; });
  fake_node refuses([](const auto&) {
    http::response<http::string_body> res{http::status::forbidden, 11};
    res.body() = R"({"reason":"Forbidden"})";
    return res;
  });
  fake_node garbage([](const auto&) {
    http::response<http::string_body> res{http::status::ok, 11};
    res.body() = "not json";
    return res;
  });
  net::io_context io;
  // Node 9: nothing listens there.
  tcp::acceptor closed(io, {net::ip::make_address("127.0.0.1"), 0});
  const auto dead_port = closed.local_endpoint().port();
  closed.close();
  std::vector<sg::peer> peers = {
      two.as_peer(2),     three.as_peer(3),
      hangs.as_peer(4),   refuses.as_peer(5),
      garbage.as_peer(6), sg::parse_peers("9=http://127.0.0.1:" + std::to_string(dead_port)).at(0)};
  std::optional<sg::cluster_list> result;
  const auto began = std::chrono::steady_clock::now();
  sg::list_across(io, peers, "api/kernels?metadata.x=1", "token secret", std::chrono::milliseconds(300),
                  json::array({{{"id", "k1"}}, {{"id", "shared"}}}),
                  [&](sg::cluster_list l) { result = std::move(l); });
  io.run();
  const auto took = std::chrono::steady_clock::now() - began;
  ASSERT_TRUE(result);
  std::vector<std::string> ids;
  for (const auto& item : result->items)
    ids.push_back(item["id"]);
  EXPECT_EQ(ids, (std::vector<std::string>{"k1", "shared", "k2", "k3"}));
  EXPECT_EQ(result->missing, (std::vector<std::uint16_t>{4, 5, 6, 9}));
  EXPECT_GE(took, std::chrono::milliseconds(300));  // the hanging peer was waited for, no longer
  EXPECT_LT(took, std::chrono::milliseconds(3000));

  auto seen = two.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].target(), "/api/kernels?metadata.x=1");
  EXPECT_EQ(seen[0][http::field::authorization], "token secret");
  EXPECT_EQ(seen[0][sg::scope_header], "node");
}

TEST(http_get, a_body_past_the_limit_fails_the_request) {
  fake_node big([](const auto&) { return ok(json::array({{{"id", std::string(4096, 'x')}}})); });
  net::io_context io;
  std::vector<sg::http_reply> replies;
  for (std::uint64_t limit : {1024u, 64u * 1024u})
    sg::http_get(
        io, big.as_peer(2), "api/kernels", {}, std::chrono::milliseconds(2000),
        [&](sg::http_reply r) { replies.push_back(std::move(r)); }, limit);
  io.run();
  ASSERT_EQ(replies.size(), 2u);
  const auto& refused = replies[0].body.empty() ? replies[0] : replies[1];
  const auto& taken = replies[0].body.empty() ? replies[1] : replies[0];
  EXPECT_TRUE(refused.error);
  EXPECT_EQ(refused.status, 0u);
  EXPECT_FALSE(taken.error) << taken.error.message();
  EXPECT_EQ(taken.status, 200u);
  EXPECT_GT(taken.body.size(), 4096u);
}

TEST(list_across, without_peers_answers_with_the_local_part_at_once) {
  net::io_context io;
  std::optional<sg::cluster_list> result;
  sg::list_across(io, {}, "api/kernels", "", std::chrono::milliseconds(500), json::array({{{"id", "a"}}}),
                  [&](sg::cluster_list l) { result = std::move(l); });
  ASSERT_TRUE(result);
  EXPECT_EQ(result->items.size(), 1u);
  EXPECT_TRUE(result->missing.empty());
}

}  // namespace
