#include "executions.hpp"

#include "../audit/audit_log.hpp"
#include "../util/json_input.hpp"
#include "../util/metrics.hpp"

#include <jupyter_protocol/json_members.hpp>

#include <array>

namespace sandgate::gateway {

std::string execution_state_of(const protocol::message& msg) {
  if (msg.msg_type() != "status") return {};
  return protocol::string_member(msg.content, "execution_state").value_or(std::string());
}

using json = nlohmann::json;

namespace {

// Digests the "code" of an execute_request's or execute_input's content.
void digest_code(execution_record& r, std::string_view content, const char* from) {
  const auto code = protocol::string_member(content, "code");
  if (!code) return;
  r.code_sha256 = sha256_hex(*code);
  r.code_bytes = code->size();
  r.code_from = from;
}

// {ename, evalue, traceback} of an error or execute_reply content; members
// of another type than the protocol's (a kernel may send anything) read as
// empty.
json error_of(const json& content) {
  const auto text = [&](const char* key) {
    auto it = content.find(key);
    return it != content.end() && it->is_string() ? *it : json("");
  };
  json traceback = json::array();
  if (auto it = content.find("traceback"); it != content.end() && it->is_array()) {
    for (const auto& line : *it)
      if (line.is_string()) traceback.push_back(line);
  }
  return json{{"ename", text("ename")}, {"evalue", text("evalue")}, {"traceback", std::move(traceback)}};
}

// A record that began before this process: the steady clock restarts with
// the process, so the time gone by since `t` is carried over.
void started_at(execution_record& r, std::chrono::system_clock::time_point t) {
  r.started = t;
  const auto elapsed =
      std::max(std::chrono::system_clock::duration::zero(), std::chrono::system_clock::now() - t);
  r.started_steady = std::chrono::steady_clock::now() -
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(elapsed);
}

// Whether a stream message is stderr's. Kernels write the name first
// ({"name":"stdout","text":...}), which saves reading the text just for the
// name; any other form is read whole.
bool is_stderr(std::string_view stream_content) {
  constexpr std::string_view out = R"({"name":"stdout",)";
  constexpr std::string_view err = R"({"name":"stderr",)";
  if (stream_content.starts_with(out)) return false;
  if (stream_content.starts_with(err)) return true;
  return protocol::string_member(stream_content, "name") == "stderr";
}

}  // namespace

std::string execution_record::to_json() const {
  return json_text(json::object());
}

std::string execution_record::to_stored_json() const {
  return json_text(
      {{"started_us",
        std::chrono::duration_cast<std::chrono::microseconds>(started.time_since_epoch()).count()},
       {"timeout_ms", timeout ? json(timeout->count()) : json(nullptr)}});
}

std::string execution_record::json_text(json members) const {
  const auto end = finished.value_or(std::chrono::steady_clock::now());
  members.update(json{
      {"msg_id", msg_id},
      {"status", status},
      {"execution_count", execution_count ? json(*execution_count) : json(nullptr)},
      {"stdout", stdout_text},
      {"stderr", stderr_text},
      {"result", result ? json(*result) : json(nullptr)},
      {"error", error ? *error : json(nullptr)},
      {"timed_out", timed_out},
      {"kernel_restarted", kernel_restarted},
      {"truncated", truncated},
      {"sandbox_ended", sandbox_ended.empty() ? json(nullptr) : json(sandbox_ended)},
      {"started", protocol::iso8601(started)},
      {"duration_ms", std::chrono::duration_cast<std::chrono::milliseconds>(end - started_steady).count()}});
  std::string text = members.dump(-1, ' ', false, json::error_handler_t::replace);
  // The outputs go in as the kernel's text: a non-empty object's last '}'
  // gives way to one more member.
  text.pop_back();
  text += R"(,"outputs":[)";
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (i > 0) text += ',';
    text += outputs[i];
  }
  text += "]}";
  return text;
}

std::shared_ptr<execution_record> execution_log::begin(const std::string& msg_id,
                                                       std::string_view request_content,
                                                       const std::string& principal,
                                                       std::optional<std::chrono::milliseconds> timeout) {
  if (msg_id.empty()) return nullptr;
  auto r = std::make_shared<execution_record>();
  r->msg_id = msg_id;
  r->principal = principal;
  r->timeout = timeout;
  if (!request_content.empty()) digest_code(*r, request_content, "request");
  if (!insert(r)) return records_[msg_id];
  start(r);
  return r;
}

void execution_log::start(const std::shared_ptr<execution_record>& r) {
  evict();
  if (on_start_) on_start_(*r);
}

std::shared_ptr<execution_record> execution_log::take_up(const std::string& msg_id,
                                                         std::chrono::system_clock::time_point started) {
  const auto now = std::chrono::system_clock::now();
  if (msg_id.empty() || now - started > limits_.retention) return nullptr;
  auto r = std::make_shared<execution_record>();
  r->msg_id = msg_id;
  r->reply_lost = true;
  started_at(*r, std::min(started, now));
  if (!insert(r)) return nullptr;
  start(r);
  return r;
}

bool execution_log::insert(const std::shared_ptr<execution_record>& r) {
  if (!records_.emplace(r->msg_id, r).second) return false;
  order_.push_back(r->msg_id);
  return true;
}

std::shared_ptr<execution_record> execution_log::restore(const json& stored) {
  if (!stored.is_object() || !stored.contains("msg_id") || !stored["msg_id"].is_string() ||
      !stored.contains("started_us") || !stored["started_us"].is_number_integer())
    return nullptr;
  auto r = std::make_shared<execution_record>();
  r->msg_id = stored["msg_id"].get<std::string>();
  if (r->msg_id.empty()) return nullptr;
  r->reply_lost = true;
  started_at(*r, std::chrono::system_clock::time_point(
                     std::chrono::microseconds(stored["started_us"].get<std::int64_t>())));
  if (stored.contains("timeout_ms") && stored["timeout_ms"].is_number_integer())
    r->timeout = std::chrono::milliseconds(stored["timeout_ms"].get<std::int64_t>());
  return insert(r) ? r : nullptr;
}

std::shared_ptr<execution_record> execution_log::find(const std::string& msg_id) const {
  auto it = records_.find(msg_id);
  return it == records_.end() ? nullptr : it->second;
}

void execution_log::wait(const std::string& msg_id, waiter w) {
  auto r = find(msg_id);
  if (!r) return;
  if (r->done()) return w(*r);
  waiters_[msg_id].push_back(std::move(w));
}

bool execution_log::on_message(protocol::channel ch, const protocol::message& msg, std::string_view status) {
  auto it = records_.find(msg.parent.msg_id);
  if (it == records_.end()) return false;
  auto& r = *it->second;
  if (r.done()) return true;
  const std::string type = msg.msg_type();
  const std::size_t before = r.bytes;
  if (ch == protocol::channel::shell && type == "execute_reply") {
    // Read without a document; only an error's details need one.
    std::array<protocol::json_member, 2> m{{{"execution_count"}, {"status"}}};
    if (protocol::read_members(msg.content, m)) {
      if (m[0].integer) r.execution_count = *m[0].integer;
      std::string reply_status = m[1].string.value_or("error");
      // "abort" is the protocol's older spelling of "aborted", still IRkernel's
      // answer to an interrupted cell: one word for it in records and the audit.
      if (reply_status == "abort") reply_status = "aborted";
      if (r.status == "running") r.status = reply_status;
      if (reply_status == "error" && !r.error) {
        // read_members has validated it, depth included: parsed once more, not checked again.
        const auto content = json::parse(msg.content, nullptr, false);
        if (content.is_object()) r.error = error_of(content);
      }
    }
    r.replied = true;
  } else if (ch == protocol::channel::iopub) {
    if (type == "status") {
      if (status == "idle") r.idle = true;
    } else if (type == "execute_input") {
      if (r.code_from.empty()) digest_code(r, msg.content, "kernel");
      // The reply says it again; a record taken up after a restart has no reply.
      if (!r.execution_count) {
        std::array<protocol::json_member, 1> count{{{"execution_count"}}};
        if (protocol::read_members(msg.content, count)) r.execution_count = count[0].integer;
      }
    } else if (type == "stream") {
      std::array<protocol::json_member, 2> m{{{"name"}, {"text"}}};
      const auto full = [&](const std::string& text) { return text.size() >= limits_.max_stream_bytes; };
      // Text for a stream that is already full is not even read; with both
      // full, neither is the name.
      const bool both_full = full(r.stdout_text) && full(r.stderr_text);
      if (both_full || ((full(r.stdout_text) || full(r.stderr_text)) &&
                        full(is_stderr(msg.content) ? r.stderr_text : r.stdout_text))) {
        r.truncated = true;
      } else if (protocol::read_members(msg.content, m) && m[1].string) {
        auto& text = m[0].string == "stderr" ? r.stderr_text : r.stdout_text;
        const auto& add = *m[1].string;
        const std::size_t room = limits_.max_stream_bytes - std::min(limits_.max_stream_bytes, text.size());
        if (add.size() > room) r.truncated = true;
        text.append(add, 0, std::min(room, add.size()));
        r.bytes += std::min(room, add.size());
      }
    } else if (type == "display_data" || type == "execute_result" || type == "update_display_data") {
      if (r.bytes + msg.content.size() > limits_.max_output_bytes) {
        r.truncated = true;
      } else {
        std::array<protocol::json_member, 2> m{{{"data"}, {"metadata"}}};
        if (!protocol::read_members(msg.content, m)) {
          r.truncated = true;  // not JSON, or nested too deep to keep
        } else {
          // data and metadata as the kernel wrote them (valid JSON: read_members checked).
          const std::string_view data = m[0].raw.value_or("{}");
          const std::string_view metadata = m[1].raw.value_or("{}");
          std::string out = R"({"output_type":")";
          out.reserve(out.size() + type.size() + data.size() + metadata.size() + 32);
          out.append(type).append(R"(","data":)").append(data).append(R"(,"metadata":)").append(metadata) +=
              '}';
          if (type == "execute_result") {
            if (auto plain = protocol::string_member(data, "text/plain")) r.result = std::move(*plain);
          }
          r.outputs.push_back(std::move(out));
          r.bytes += msg.content.size();
        }
      }
    } else if (type == "error") {
      const auto content = parse_json(msg.content);
      if (content.is_object()) r.error = error_of(content);
    }
  }
  total_bytes_ += r.bytes - before;
  maybe_finish(r);
  evict();
  return true;
}

void execution_log::finish(execution_record& r, const std::string& status) {
  if (r.done()) return;
  r.status = status;
  r.finished = std::chrono::steady_clock::now();
  auto& counters = gateway_metrics();
  ++counters.executions;
  counters.execution_seconds.observe(*r.finished - r.started_steady);
  if (status == "timeout") ++counters.execution_timeouts;
  for (const auto& listener : on_finish_)
    listener(r);
  auto it = waiters_.find(r.msg_id);
  if (it == waiters_.end()) return;
  auto waiting = std::move(it->second);
  waiters_.erase(it);
  for (auto& w : waiting)
    w(r);
}

void execution_log::maybe_finish(execution_record& r) {
  if (!r.idle || !(r.replied || r.reply_lost)) return;
  std::string status = r.status;
  if (status == "running") status = r.error ? "error" : "ok";  // no reply to say so
  if (r.timed_out) status = "timeout";
  finish(r, status);
}

void execution_log::end_all(const std::string& why, bool restarted) {
  for (auto& [id, r] : records_) {
    if (r->done()) continue;
    r->kernel_restarted = restarted;
    if (!r->error)
      r->error =
          json{{"ename", "KernelDied"}, {"evalue", why}, {"traceback", json::array({"KernelDied: " + why})}};
    finish(*r, r->timed_out ? "timeout" : "error");
  }
}

void execution_log::end_with_sandbox(const std::string& reason, const std::string& description) {
  for (auto& [id, r] : records_) {
    if (r->done()) continue;
    r->sandbox_ended = reason;
    r->timed_out = false;  // whatever its deadline was, the sandbox ended it
    r->error = json{{"ename", "SandboxEnded"},
                    {"evalue", description},
                    {"traceback", json::array({"SandboxEnded: " + description})}};
    finish(*r, "error");
  }
}

void execution_log::evict() {
  const auto now = std::chrono::steady_clock::now();
  auto expired = [&](const execution_record& r) {
    if (!r.done()) return false;
    const auto age = now - *r.finished;
    return age > limits_.retention || (age >= limits_.min_keep && (order_.size() > limits_.max_records ||
                                                                   total_bytes_ > limits_.max_total_bytes));
  };
  // Oldest first; a running record is never dropped, and stops the sweep.
  while (!order_.empty()) {
    auto it = records_.find(order_.front());
    if (it == records_.end()) {
      order_.pop_front();
      continue;
    }
    if (!expired(*it->second)) break;
    total_bytes_ -= std::min(total_bytes_, it->second->bytes);
    records_.erase(it);
    order_.pop_front();
  }
}

}  // namespace sandgate::gateway
