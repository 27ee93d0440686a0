#include "bridge/client_hub.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace sandgate::gateway {
namespace {

using protocol::channel;

// A client that keeps what it is given.
class recording_client final : public kernel_client {
 public:
  explicit recording_client(std::string session) : session_(std::move(session)) {}
  [[nodiscard]] const std::string& session_id() const noexcept override { return session_; }
  [[nodiscard]] const std::string& principal() const noexcept override { return principal_; }
  void deliver(const std::shared_ptr<outgoing>& out) override { got.push_back(out); }
  void close(unsigned short code, std::string reason) override {
    closed_code = code;
    closed_reason = std::move(reason);
  }

  [[nodiscard]] std::vector<std::string> types() const {
    std::vector<std::string> t;
    for (const auto& o : got)
      t.push_back(o->message().msg_type());
    return t;
  }

  std::vector<std::shared_ptr<outgoing>> got;
  unsigned short closed_code = 0;
  std::string closed_reason;

 private:
  std::string session_;
  std::string principal_ = "someone";
};

protocol::message request(const std::string& type, const std::string& session = "client") {
  return protocol::make_message(type, "{}", session);
}

std::shared_ptr<outgoing> reply_to(const protocol::message& req, const std::string& type,
                                   std::string content = "{}") {
  return std::make_shared<outgoing>(channel::shell, protocol::make_reply(req, type, std::move(content)));
}

std::shared_ptr<outgoing> stream(const std::string& text) {
  return std::make_shared<outgoing>(
      channel::iopub,
      protocol::make_message("stream", R"({"name":"stdout","text":")" + text + R"("})", "kernel"));
}

client_hub make_hub(std::size_t replay_bytes = 1 << 20, std::size_t max_pending = 100) {
  return client_hub("kernel-under-test",
                    client_hub_limits{std::chrono::seconds(60), replay_bytes, 4, max_pending});
}

TEST(client_hub, broadcast_reaches_every_client) {
  auto hub = make_hub();
  auto a = std::make_shared<recording_client>("a");
  auto b = std::make_shared<recording_client>("b");
  hub.join(a);
  hub.join(b);
  hub.broadcast(stream("x"));
  EXPECT_EQ(a->types(), std::vector<std::string>{"stream"});
  EXPECT_EQ(b->types(), std::vector<std::string>{"stream"});
  EXPECT_EQ(hub.size(), 2u);
}

TEST(client_hub, a_reply_goes_to_the_client_that_asked_and_only_once) {
  auto hub = make_hub();
  auto a = std::make_shared<recording_client>("a");
  auto b = std::make_shared<recording_client>("b");
  hub.join(a);
  hub.join(b);
  auto req = request("kernel_info_request");
  hub.remember(req.msg_id(), b, req.msg_type(), req.header);
  hub.deliver_reply(reply_to(req, "kernel_info_reply"));
  hub.deliver_reply(reply_to(req, "kernel_info_reply"));  // a second one has nobody to go to
  EXPECT_TRUE(a->got.empty());
  EXPECT_EQ(b->types(), std::vector<std::string>{"kernel_info_reply"});
}

TEST(client_hub, a_returning_session_gets_what_it_missed_first_and_its_replies) {
  auto hub = make_hub();
  auto first = std::make_shared<recording_client>("s");
  hub.join(first);
  auto req = request("execute_request", "s");
  hub.remember(req.msg_id(), first, req.msg_type(), req.header);
  hub.leave(first, {stream("unsent")});
  hub.broadcast(stream("while-away"));
  hub.deliver_reply(reply_to(req, "execute_reply", R"({"status":"ok"})"));
  auto second = std::make_shared<recording_client>("s");
  hub.join(second);
  ASSERT_EQ(second->types(), (std::vector<std::string>{"stream", "stream", "execute_reply"}));
  EXPECT_NE(second->got[0]->message().content.find("unsent"), std::string::npos);
  EXPECT_NE(second->got[1]->message().content.find("while-away"), std::string::npos);
  // The buffer was handed over once: a third connection of the session gets nothing old.
  auto third = std::make_shared<recording_client>("s");
  hub.join(third);
  EXPECT_TRUE(third->got.empty());
}

TEST(client_hub, a_reply_finds_another_connection_of_the_same_session) {
  auto hub = make_hub();
  auto first = std::make_shared<recording_client>("s");
  auto second = std::make_shared<recording_client>("s");
  hub.join(first);
  hub.join(second);
  auto req = request("complete_request", "s");
  hub.remember(req.msg_id(), first, req.msg_type(), req.header);
  hub.leave(first, {});  // the session is still here: nothing is buffered
  hub.deliver_reply(reply_to(req, "complete_reply"));
  EXPECT_EQ(second->types(), std::vector<std::string>{"complete_reply"});
}

TEST(client_hub, a_replay_buffer_keeps_the_newest_within_its_bytes) {
  const std::size_t one = stream("0123456789")->size_bytes();
  auto hub = make_hub(3 * one);
  auto first = std::make_shared<recording_client>("s");
  hub.join(first);
  hub.leave(first, {});
  for (int i = 0; i < 5; ++i)
    hub.broadcast(stream("012345678" + std::to_string(i)));
  auto back = std::make_shared<recording_client>("s");
  hub.join(back);
  ASSERT_EQ(back->got.size(), 3u);
  EXPECT_NE(back->got.front()->message().content.find("0123456782"), std::string::npos);
  EXPECT_NE(back->got.back()->message().content.find("0123456784"), std::string::npos);
}

TEST(client_hub, lost_executes_are_answered_with_an_error_a_reply_and_idle) {
  auto hub = make_hub();
  auto a = std::make_shared<recording_client>("a");
  hub.join(a);
  auto exec = request("execute_request", "a");
  auto info = request("kernel_info_request", "a");
  hub.remember(exec.msg_id(), a, exec.msg_type(), exec.header);
  hub.remember(info.msg_id(), a, info.msg_type(), info.header);
  hub.answer_lost_executes("the kernel died", "gateway");
  ASSERT_EQ(a->types(), (std::vector<std::string>{"error", "execute_reply", "status"}));
  for (const auto& out : a->got)
    EXPECT_EQ(out->message().parent.msg_id, exec.msg_id());
  EXPECT_NE(a->got[1]->message().content.find(R"("status":"error")"), std::string::npos);
  EXPECT_NE(a->got[2]->message().content.find("idle"), std::string::npos);
  // Only executes are answered so; the other request still finds its client.
  hub.deliver_reply(reply_to(info, "kernel_info_reply"));
  EXPECT_EQ(a->got.back()->message().msg_type(), "kernel_info_reply");
}

TEST(client_hub, pending_requests_are_bounded_oldest_first) {
  auto hub = make_hub(1 << 20, 2);
  auto a = std::make_shared<recording_client>("a");
  hub.join(a);
  std::vector<protocol::message> reqs;
  for (int i = 0; i < 3; ++i) {
    reqs.push_back(request("inspect_request"));
    hub.remember(reqs.back().msg_id(), a, reqs.back().msg_type(), reqs.back().header);
  }
  for (const auto& r : reqs)
    hub.deliver_reply(reply_to(r, "inspect_reply"));
  EXPECT_EQ(a->got.size(), 2u);  // the oldest was forgotten
}

TEST(client_hub, close_all_closes_every_client_and_forgets_them) {
  auto hub = make_hub();
  auto a = std::make_shared<recording_client>("a");
  hub.join(a);
  hub.close_all(1001, "kernel shut down");
  EXPECT_EQ(a->closed_code, 1001);
  EXPECT_EQ(a->closed_reason, "kernel shut down");
  EXPECT_EQ(hub.size(), 0u);
  hub.broadcast(stream("after"));
  EXPECT_TRUE(a->got.empty());
}

}  // namespace
}  // namespace sandgate::gateway
