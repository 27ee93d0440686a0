#include "kernels/executions.hpp"

#include <jupyter_protocol/json_members.hpp>

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
  // The bundles are the kernel's own text.
  EXPECT_EQ(r->outputs,
            std::vector<std::string>{
                R"({"output_type":"display_data","data":{"image/png":"AA=="},"metadata":{"w":1}})"});
  EXPECT_EQ(r->result, std::nullopt);
  EXPECT_EQ(r->error, nlohmann::json::parse(
                          R"({"ename":"ZeroDivisionError","evalue":"division by zero","traceback":["tb"]})"));
  EXPECT_EQ(r->code_from, "request");
  EXPECT_EQ(r->code_bytes, 3u);
  EXPECT_EQ(r->code_sha256, "18d6e1cac2a8adaf25577cca14db7753507f4f03a288124ce9fe2d60babd7bb0");
}

// What a hostile kernel may send, signed with its own key: members of other
// types than the protocol's, and JSON nested far deeper than any message.
TEST(execution_log, mistyped_or_deeply_nested_messages_are_kept_out_of_the_record) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  execution_log log;
  log.begin("e1");
  EXPECT_NO_THROW(log.on_message(
      channel::iopub, child_of("e1", "error", R"({"ename":5,"evalue":[1],"traceback":["kept",7,{"x":1}]})"),
      ""));
  log.on_message(channel::iopub, child_of("e1", "error", R"({"ename":"Deep","traceback":)" + deep + "}"), "");
  log.on_message(channel::iopub,
                 child_of("e1", "display_data", R"({"data":{"text/plain":)" + deep + R"(},"metadata":{}})"),
                 "");
  log.on_message(channel::iopub,
                 child_of("e1", "display_data", R"({"data":{"text/plain":"shallow"},"metadata":{}})"), "");
  EXPECT_NO_THROW(log.on_message(
      channel::shell,
      child_of("e1", "execute_reply", R"({"status":"error","ename":[],"traceback":)" + deep + "}"), ""));
  log.on_message(channel::iopub, child_of("e1", "status", R"({"execution_state":"idle"})"), "idle");
  const auto r = log.find("e1");
  ASSERT_TRUE(r && r->done());
  EXPECT_EQ(r->status, "error");
  EXPECT_EQ(r->error, nlohmann::json::parse(R"({"ename":"","evalue":"","traceback":["kept"]})"));
  EXPECT_TRUE(r->truncated);
  EXPECT_EQ(r->outputs,
            std::vector<std::string>{
                R"({"output_type":"display_data","data":{"text/plain":"shallow"},"metadata":{}})"});
  // The record as JSON is shallow: writing it out does not recurse deep.
  const auto text = r->to_json();
  EXPECT_TRUE(protocol::valid_json(text, 8)) << text;
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

TEST(execution_log, an_abort_reply_is_recorded_as_aborted) {
  // IRkernel answers an interrupted cell with the protocol's older "abort".
  execution_log log;
  log.begin("e1");
  log.on_message(channel::shell, child_of("e1", "execute_reply", R"({"status":"abort","execution_count":2})"),
                 "");
  log.on_message(channel::iopub, child_of("e1", "status", R"({"execution_state":"idle"})"), "idle");
  const auto r = log.find("e1");
  ASSERT_TRUE(r && r->done());
  EXPECT_EQ(r->status, "aborted");
  EXPECT_EQ(r->error, std::nullopt);
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
  log.on_message(channel::iopub, child_of("e1", "stream", R"({"name":"stdout","text":"again"})"), "");
  EXPECT_EQ(r->stdout_text, "0123456789");
  log.on_message(channel::iopub, child_of("e1", "stream", R"({"name":"stderr","text":"0123456789"})"), "");
  log.on_message(channel::iopub, child_of("e1", "stream", R"({"name":"stderr","text":"x"})"), "");
  EXPECT_EQ(r->stderr_text, "w\xc3\xa4rn01234");
  EXPECT_EQ(r->bytes, 20u);
}

TEST(execution_log, a_record_as_json_carries_the_kernels_bundles_and_a_stored_one_its_start_and_limit) {
  execution_log log;
  log.begin("e1", {}, "alice", std::chrono::milliseconds(1500));
  // Member order and spacing as the kernel wrote them; a repeated key's last value counts.
  const std::string data = R"({"text/plain" : "'x'", "text/html":"<b>x</b>"})";
  log.on_message(channel::iopub,
                 child_of("e1", "execute_result",
                          R"({"data":{"text/plain":"old"},"execution_count":1,"data":)" + data +
                              R"(,"metadata":{"n":[1,2.50]}})"),
                 "");
  log.on_message(channel::iopub, child_of("e1", "stream", R"({"name":"stdout","text":"\u00e9\n"})"), "");
  const auto r = log.find("e1");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result, "'x'");
  ASSERT_EQ(r->outputs.size(), 1u);
  EXPECT_EQ(r->outputs[0],
            R"({"output_type":"execute_result","data":)" + data + R"(,"metadata":{"n":[1,2.50]}})");
  const auto j = nlohmann::json::parse(r->to_json());
  EXPECT_EQ(j["msg_id"], "e1");
  EXPECT_EQ(j["status"], "running");
  EXPECT_EQ(j["result"], "'x'");
  EXPECT_EQ(j["stdout"], "\xc3\xa9\n");
  EXPECT_EQ(j["outputs"], nlohmann::json::parse(R"([{"output_type":"execute_result","data":)" + data +
                                                R"(,"metadata":{"n":[1,2.5]}}])"));
  EXPECT_FALSE(j.contains("started_us"));
  const auto stored = nlohmann::json::parse(r->to_stored_json());
  EXPECT_EQ(stored["timeout_ms"], 1500);
  EXPECT_EQ(stored["outputs"], j["outputs"]);
  // What restore() needs is there: a record taken up from it has the start and the limit.
  execution_log after;
  const auto taken = after.restore(stored);
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->started, std::chrono::time_point_cast<std::chrono::microseconds>(r->started));
  EXPECT_EQ(taken->timeout, std::chrono::milliseconds(1500));
}

TEST(execution_log, a_record_without_a_reply_takes_its_count_from_the_execute_input) {
  execution_log log;
  log.begin("e1");
  log.on_message(channel::iopub, child_of("e1", "execute_input", R"({"code":"1","execution_count":12})"), "");
  const auto r = log.find("e1");
  EXPECT_EQ(r->execution_count, 12);
  EXPECT_EQ(r->code_from, "kernel");  // begin() had no request content
  log.on_message(channel::shell, child_of("e1", "execute_reply", R"({"status":"ok","execution_count":13})"),
                 "");
  EXPECT_EQ(r->execution_count, 13) << "the reply has the last word";
}

TEST(execution_log, take_up_begins_a_record_at_the_kernels_start_within_the_retention) {
  using namespace std::chrono;
  execution_limits limits;
  limits.retention = hours(1);
  execution_log log(limits);
  std::vector<std::string> started;
  log.on_start([&](const execution_record& r) { started.push_back(r.msg_id); });
  const auto ten_s_ago = system_clock::now() - seconds(10);
  const auto r = log.take_up("e1", ten_s_ago);
  ASSERT_TRUE(r);
  EXPECT_EQ(started, std::vector<std::string>{"e1"}) << "its running row is written like any other";
  EXPECT_TRUE(r->reply_lost);
  EXPECT_EQ(r->started, ten_s_ago);
  EXPECT_GE(steady_clock::now() - r->started_steady, seconds(10)) << "its duration counts from then";
  // Its idle status ends it: the reply went to the gateway before.
  log.on_message(channel::iopub, child_of("e1", "status", R"({"execution_state":"idle"})"), "idle");
  EXPECT_EQ(r->status, "ok");
  EXPECT_GE(nlohmann::json::parse(r->to_json())["duration_ms"].get<long long>(), 10'000);
  EXPECT_FALSE(log.take_up("e1", ten_s_ago)) << "one record per msg_id";
  EXPECT_FALSE(log.take_up("old", system_clock::now() - hours(2))) << "past the retention";
  const auto future = log.take_up("e2", system_clock::now() + hours(1));
  ASSERT_TRUE(future);
  EXPECT_LE(future->started, system_clock::now()) << "a kernel's clock is not believed past now";
  EXPECT_EQ(started, (std::vector<std::string>{"e1", "e2"}));
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
