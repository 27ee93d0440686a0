#pragma once
// What became of each execute_request a kernel received, from any client
// (WebSocket or the REST execute): its status, streams, outputs and error,
// kept for a while so that a client that lost its connection can read the
// result (GET /api/kernels/{id}/executions/{msg_id}). Bounded in records,
// bytes and time.

#include <jupyter_protocol/message.hpp>
#include <jupyter_protocol/websocket.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sandgate::gateway {

// The execution_state of an iopub status message; empty for any other.
[[nodiscard]] std::string execution_state_of(const protocol::message& msg);

struct execution_record {
  std::string msg_id;
  std::string principal;           // who sent it over the channels (the audit log's); empty: the gateway
  std::string status = "running";  // running, ok, error, aborted, timeout
  std::optional<long long> execution_count;
  std::string stdout_text;
  std::string stderr_text;
  std::optional<std::string> result;  // the execute_result's text/plain, if there was one
  // display_data / execute_result / update_display_data bundles, each the
  // JSON text {"output_type", "data", "metadata"} whose data and metadata
  // are the kernel's own text, validated but never parsed into a document.
  std::vector<std::string> outputs;
  std::optional<nlohmann::json> error;  // {ename, evalue, traceback}
  bool timed_out = false;
  bool kernel_restarted = false;
  bool truncated = false;     // output past the record's limits was dropped
  std::string sandbox_ended;  // why its sandbox ended under it ("deleted", "expired", ...), or ""
  bool replied = false;
  bool idle = false;
  // Taken up after a gateway restart: the kernel's execute_reply went to the
  // gateway that sent the request, so the idle status ends the record and
  // the status comes from iopub (an error message or not).
  bool reply_lost = false;
  std::optional<std::chrono::milliseconds> timeout;  // from when the kernel starts on it
  std::chrono::system_clock::time_point started = std::chrono::system_clock::now();
  std::chrono::steady_clock::time_point started_steady = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> finished;
  std::size_t bytes = 0;
  // The code's SHA-256 (hex) and size in bytes, for the audit log; the code
  // itself is not kept. `code_from`: "request" (the execute_request, given
  // to begin()), "kernel" (its execute_input echo: the kernel runs the
  // creator's code, so trust it no further than that), "" (unknown).
  std::string code_sha256;
  std::uint64_t code_bytes = 0;
  std::string code_from;

  [[nodiscard]] bool done() const noexcept { return finished.has_value(); }
  // The record as the API shows it, JSON text (invalid UTF-8 in the
  // streams replaced).
  [[nodiscard]] std::string to_json() const;
  // What a restarted gateway needs to take up a running record: to_json()
  // plus the exact start time and the timeout.
  [[nodiscard]] std::string to_stored_json() const;

 private:
  [[nodiscard]] std::string json_text(nlohmann::json members) const;
};

// What one kernel's log keeps in memory. A finished record also goes to the
// registry, which answers for it once it has left the log: the log holds the
// running records and a few recent ones. Past the count or the bytes, the
// oldest finished records go, but none in its first `min_keep` (the registry
// commits a finished record within a few milliseconds).
struct execution_limits {
  std::size_t max_records = 16;
  std::size_t max_total_bytes = 16 * 1024 * 1024;
  std::chrono::milliseconds min_keep{1000};
  std::size_t max_stream_bytes = 1024 * 1024;       // per stream of one record
  std::size_t max_output_bytes = 16 * 1024 * 1024;  // displays of one record
  std::chrono::seconds retention{3600};
};

class execution_log {
 public:
  using waiter = std::function<void(const execution_record&)>;

  explicit execution_log(execution_limits limits = {}) : limits_(limits) {}

  // Adds a listener told of every record as it ends (to keep it beyond
  // this log's bounds, to audit it), before the record's waiters.
  void on_finish(waiter listener) { on_finish_.push_back(std::move(listener)); }

  // Told of every record as it begins.
  void on_start(waiter listener) { on_start_ = std::move(listener); }

  // An execute_request sent to the kernel; `request_content`: its content
  // (JSON text), whose code is digested for the audit log; `principal`: who
  // sent it; `timeout`: its time limit. All are in the record before the
  // start listener sees it (a restarted gateway takes them up from there).
  std::shared_ptr<execution_record> begin(const std::string& msg_id, std::string_view request_content = {},
                                          const std::string& principal = {},
                                          std::optional<std::chrono::milliseconds> timeout = {});
  // A running record a previous gateway stored (to_stored_json), taken up
  // with its output so far empty; null if the text is not such a record.
  std::shared_ptr<execution_record> restore(const nlohmann::json& stored);
  // An execute a previous gateway sent but stored nothing of, that the
  // kernel began at `started` (its execute_input's date; the kernel's clock,
  // so no later than now): its reply went to that gateway. Begun like
  // begin(), the start listener told. Null if the msg_id has a record, or
  // `started` lies past the retention: the records promise no more.
  std::shared_ptr<execution_record> take_up(const std::string& msg_id,
                                            std::chrono::system_clock::time_point started);
  // A message from the kernel; true when its parent is a tracked execute.
  // `status`: the execution_state of an iopub status message (else empty),
  // read once by the caller.
  bool on_message(protocol::channel ch, const protocol::message& msg, std::string_view status);
  [[nodiscard]] std::shared_ptr<execution_record> find(const std::string& msg_id) const;
  // Calls `w` when the record is done (at once if it is).
  void wait(const std::string& msg_id, waiter w);
  // Ends every running record (the kernel died or restarted).
  void end_all(const std::string& why, bool restarted);
  // Ends every running record because the kernel's sandbox ended (`reason`
  // "deleted", "expired", ...): an error SandboxEnded saying `description`.
  void end_with_sandbox(const std::string& reason, const std::string& description);
  // Ends one record now, as `status`.
  void finish(execution_record& r, const std::string& status);

 private:
  void maybe_finish(execution_record& r);
  void start(const std::shared_ptr<execution_record>& r);   // inserted: evicts, tells the start listener
  bool insert(const std::shared_ptr<execution_record>& r);  // false: the msg_id is taken
  void evict();

  execution_limits limits_;
  std::unordered_map<std::string, std::shared_ptr<execution_record>> records_;
  std::deque<std::string> order_;
  std::unordered_map<std::string, std::vector<waiter>> waiters_;
  std::size_t total_bytes_ = 0;
  std::vector<waiter> on_finish_;
  waiter on_start_;
};

}  // namespace sandgate::gateway
