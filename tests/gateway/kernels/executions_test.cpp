#include "kernels/executions.hpp"

#include <gtest/gtest.h>

namespace sandgate::gateway {
namespace {

using protocol::channel;

protocol::message child_of(const std::string& parent, const std::string& type, std::string content) {
  auto m = protocol::make_message(type, std::move(content), "kernel-session");
  m.parent.msg_id = parent;
  return m;
}

TEST(execution_log, ends_on_reply_and_idle_with_streams_result_and_waiters) {
  execution_log log;
  log.begin("e1");
  int called = 0;
  log.wait("e1", [&](const execution_record& r) {
    ++called;
    EXPECT_EQ(r.status, "ok");
  });
  EXPECT_TRUE(
      log.on_message(channel::iopub, child_of("e1", "stream", R"({"name":"stdout","text":"hi\n"})"), ""));
  EXPECT_TRUE(log.on_message(
      channel::iopub, child_of("e1", "execute_result", R"({"data":{"text/plain":"42"},"metadata":{}})"), ""));
  EXPECT_TRUE(log.on_message(channel::shell,
                             child_of("e1", "execute_reply", R"({"status":"ok","execution_count":3})"), ""));
  EXPECT_EQ(called, 0);  // the idle status is still to come
  EXPECT_TRUE(
      log.on_message(channel::iopub, child_of("e1", "status", R"({"execution_state":"idle"})"), "idle"));
  EXPECT_EQ(called, 1);
  const auto r = log.find("e1");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->stdout_text, "hi\n");
  EXPECT_EQ(r->result, "42");
  EXPECT_EQ(r->execution_count, 3);
  EXPECT_FALSE(log.on_message(channel::iopub, child_of("other", "stream", "{}"), ""));
}

TEST(execution_log, an_error_reply_stderr_and_displays_are_recorded) {
  execution_log log;
  log.begin("e1", R"({"code":"1/0","silent":false})");
  log.on_message(channel::iopub, child_of("e1", "stream", R"({"name":"stderr","text":"w\u00e4rn\n"})"), "");
  log.on_message(channel::iopub, child_of("e1", "stream", R"({"name":"stdout","text":"out"})"), "");
  log.on_message(channel::iopub, child_of("e1", "stream", R"({"name":"stdout","text":3})"), "");
  log.on_message(channel::iopub,
                 child_of("e1", "display_data", R"({"data":{"image/png":"AA=="},"metadata":{"w":1}})"), "");
  log.on_message(channel::shell,
                 child_of("e1", "execute_reply",
                          R"({"status":"error","execution_count":7,"ename":"ZeroDivisionError",)"
                          R"("evalue":"division by zero","traceback":["tb"]})"),
                 "");
  log.on_message(channel::iopub, child_of("e1", "status", R"({"execution_state":"idle"})"), "idle");
  const auto r = log.find("e1");
  ASSERT_TRUE(r && r->done());
  EXPECT_EQ(r->status, "error");
  EXPECT_EQ(r->execution_count, 7);
  EXPECT_EQ(r->stderr_text, "w\xc3\xa4rn\n");
  EXPECT_EQ(r->stdout_text, "out");
  EXPECT_EQ(r->outputs,
            nlohmann::json::parse(
                R"([{"output_type":"display_data","data":{"image/png":"AA=="},"metadata":{"w":1}}])"));
  EXPECT_EQ(r->result, std::nullopt);
  EXPECT_EQ(r->error, nlohmann::json::parse(
                          R"({"ename":"ZeroDivisionError","evalue":"division by zero","traceback":["tb"]})"));
  EXPECT_EQ(r->code_from, "request");
  EXPECT_EQ(r->code_bytes, 3u);
  EXPECT_EQ(r->code_sha256, "18d6e1cac2a8adaf25577cca14db7753507f4f03a288124ce9fe2d60babd7bb0");
}

TEST(execution_log, a_reply_without_status_or_an_integer_count_is_an_error_without_a_count) {
  execution_log log;
  log.begin("e1");
  log.on_message(channel::shell, child_of("e1", "execute_reply", R"({"execution_count":"3"})"), "");
  log.on_message(channel::iopub, child_of("e1", "status", R"({"execution_state":"idle"})"), "idle");
  const auto r = log.find("e1");
  ASSERT_TRUE(r && r->done());
  EXPECT_EQ(r->status, "error");
  EXPECT_EQ(r->execution_count, std::nullopt);
}

TEST(execution_log, streams_are_capped_and_marked_truncated) {
  execution_limits limits;
  limits.max_stream_bytes = 10;
  execution_log log(limits);
  log.begin("e1");
  log.on_message(channel::iopub, child_of("e1", "stream", R"({"name":"stdout","text":"0123456789abcdef"})"),
                 "");
  const auto r = log.find("e1");
  EXPECT_EQ(r->stdout_text, "0123456789");
  EXPECT_TRUE(r->truncated);
  // A full stdout still leaves room for stderr, whichever member comes first.
  log.on_message(channel::iopub, child_of("e1", "stream", R"({"text":"more","name":"stdout"})"), "");
  log.on_message(channel::iopub, child_of("e1", "stream", R"({"text":"w\u00e4rn","name":"stderr"})"), "");
  EXPECT_EQ(r->stdout_text, "0123456789");
  EXPECT_EQ(r->stderr_text, "w\xc3\xa4rn");
  log.on_message(channel::iopub, child_of("e1", "stream", R"({"name":"stderr","text":"0123456789"})"), "");
  log.on_message(channel::iopub, child_of("e1", "stream", R"({"name":"stderr","text":"x"})"), "");
  EXPECT_EQ(r->stderr_text, "w\xc3\xa4rn01234");
  EXPECT_EQ(r->bytes, 20u);
}

// Begins a record and ends it as an ok execute does: reply, then idle.
void run_to_end(execution_log& log, const std::string& id) {
  log.begin(id);
  log.on_message(channel::shell, child_of(id, "execute_reply", R"({"status":"ok"})"), "");
  log.on_message(channel::iopub, child_of(id, "status", "{}"), "idle");
}

TEST(execution_log, keeps_at_most_max_records_dropping_the_oldest_finished) {
  execution_limits limits;
  limits.max_records = 3;
  limits.min_keep = std::chrono::milliseconds(0);
  execution_log log(limits);
  for (int i = 0; i < 5; ++i)
    run_to_end(log, "e" + std::to_string(i));
  EXPECT_FALSE(log.find("e0"));
  EXPECT_FALSE(log.find("e1"));
  EXPECT_TRUE(log.find("e4"));
  EXPECT_TRUE(log.find("e2"));
}

TEST(execution_log, a_record_just_finished_stays_until_the_registry_has_it) {
  execution_limits limits;
  limits.max_records = 1;
  limits.min_keep = std::chrono::hours(1);
  execution_log log(limits);
  for (int i = 0; i < 3; ++i)
    run_to_end(log, "e" + std::to_string(i));
  EXPECT_TRUE(log.find("e0")) << "over the count, but finished only now";
  EXPECT_TRUE(log.find("e2"));
}

TEST(execution_log, a_running_record_is_never_dropped_and_end_all_finishes_it) {
  execution_limits limits;
  limits.max_records = 1;
  execution_log log(limits);
  log.begin("running");
  log.begin("next");
  EXPECT_TRUE(log.find("running"));
  log.end_all("the kernel died", true);
  const auto r = log.find("running");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, "error");
  EXPECT_TRUE(r->kernel_restarted);
  EXPECT_EQ((*r->error)["ename"], "KernelDied");
}

}  // namespace
}  // namespace sandgate::gateway
