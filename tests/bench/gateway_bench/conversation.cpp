#include "conversation.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <vector>

namespace sandgate::bench {
using protocol::channel;

namespace {

constexpr std::string_view username = "bench";

std::string reply_error(const std::string& content) {
  const auto j = nlohmann::json::parse(content, nullptr, false);
  if (!j.is_object()) return "unparseable reply";
  return j.value("status", std::string("?")) + ": " + j.value("ename", std::string()) + " " +
         j.value("evalue", std::string());
}

received next(kernel_connection& c, bench_clock::time_point deadline, const char* what) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - bench_clock::now());
  auto r = c.receive(std::max(left, std::chrono::milliseconds(1)));
  if (!r) throw bench_error(std::string("timed out waiting for ") + what);
  return std::move(*r);
}

}  // namespace

execute_outcome execute(kernel_connection& c, const std::string& code, std::chrono::milliseconds timeout,
                        std::chrono::milliseconds idle_grace) {
  const nlohmann::json content = {{"code", code},          {"silent", false},
                                  {"store_history", true}, {"user_expressions", nlohmann::json::object()},
                                  {"allow_stdin", false},  {"stop_on_error", true}};
  auto msg = protocol::make_message("execute_request", content.dump(), c.session(), username);
  const std::string msg_id = msg.msg_id();
  execute_outcome out;
  const auto sent = bench_clock::now();
  out.sent_at = sent;
  auto deadline = sent + timeout;
  c.send(channel::shell, msg);
  bool replied = false;
  bool idle = false;
  while (!replied || !idle) {
    if (replied && idle_grace.count() > 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - bench_clock::now());
      auto r = left.count() > 0 ? c.receive(left) : std::nullopt;
      if (!r) {
        out.idle_lost = true;
        break;
      }
      if (r->channel == channel::iopub && r->message.parent.msg_id == msg_id) {
        ++out.iopub_messages;
        out.last_iopub_ms = ms_between(sent, bench_clock::now());
        deadline = bench_clock::now() + idle_grace;  // output still flowing: not lost yet
        if (r->message.msg_type() == "stream") out.stream_bytes += r->message.content.size();
        if (r->message.msg_type() == "status" && r->message.content.find("\"idle\"") != std::string::npos)
          idle = true;
      }
      continue;
    }
    auto r = next(c, deadline, "execute_reply and idle");
    const auto& m = r.message;
    if (m.parent.msg_id != msg_id) continue;
    if (r.channel == channel::iopub) {
      ++out.iopub_messages;
      out.last_iopub_ms = ms_between(sent, bench_clock::now());
      const auto& type = m.msg_type();
      if (type == "status") {
        if (m.content.find("\"idle\"") != std::string::npos) idle = true;
      } else if (type == "stream") {
        out.stream_bytes += m.content.size();
      } else if (type == "execute_result") {
        if (out.result_ms < 0) out.result_ms = ms_between(sent, bench_clock::now());
      } else if (type == "display_data") {
        if (out.first_display_ms < 0) out.first_display_ms = ms_between(sent, bench_clock::now());
        out.display_bytes += m.content.size();
      }
    } else if (r.channel == channel::shell && m.msg_type() == "execute_reply") {
      out.reply_ms = ms_between(sent, bench_clock::now());
      if (m.content.find("\"ok\"") == std::string::npos)
        throw bench_error("execute failed: " + reply_error(m.content));
      replied = true;
      if (idle_grace.count() > 0 && !idle) deadline = std::min(deadline, bench_clock::now() + idle_grace);
    }
  }
  out.done_ms = ms_between(sent, bench_clock::now());
  return out;
}

double kernel_info(kernel_connection& c, std::chrono::milliseconds timeout) {
  auto msg = protocol::make_message("kernel_info_request", "{}", c.session(), username);
  const std::string msg_id = msg.msg_id();
  const auto sent = bench_clock::now();
  const auto deadline = sent + timeout;
  c.send(channel::shell, msg);
  for (;;) {
    auto r = next(c, deadline, "kernel_info_reply");
    if (r.channel == channel::shell && r.message.parent.msg_id == msg_id) break;
  }
  return ms_between(sent, bench_clock::now());
}

void sync_iopub(kernel_connection& c, std::chrono::milliseconds timeout, std::chrono::milliseconds round) {
  const auto deadline = bench_clock::now() + timeout;
  std::vector<std::string> asked;
  while (bench_clock::now() < deadline) {
    auto msg = protocol::make_message("kernel_info_request", "{}", c.session(), username);
    asked.push_back(msg.msg_id());
    c.send(channel::shell, msg);
    const auto round_end = std::min(deadline, bench_clock::now() + round);
    while (bench_clock::now() < round_end) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(round_end - bench_clock::now());
      auto r = c.receive(std::max(left, std::chrono::milliseconds(1)));
      if (!r) break;
      if (r->channel == channel::iopub &&
          std::find(asked.begin(), asked.end(), r->message.parent.msg_id) != asked.end())
        return;
    }
  }
  throw bench_error("no iopub message arrived for kernel_info requests");
}

}  // namespace sandgate::bench
