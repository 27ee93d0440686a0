// The control protocol between the gateway and a sandbox supervisor, over the
// unix stream socket given by --control. Each frame is a u32 big-endian length
// followed by that many bytes of one JSON object; at most max_frame_bytes.
//
// supervisor -> gateway, first on every connection:
//   {"event":"ready","id":..,"pid":<host pid of the supervisor>,"outer_pid":..,
//    "host_uid":N,"host_gid":N,"expires_at":<unix s>,"max_execution_s":N,"children":["k1",..],
//    "egress_fd":N}
//   egress_fd: the supervisor's descriptor of its socket on 127.0.0.1:3128 in the
//     sandbox (absent when the port could not be kept); the gateway copies it with
//     pidfd_getfd for the egress proxy, which accepts on it (see egress_port.hpp)
// gateway -> supervisor (a "req" number is echoed in the reply):
//   {"op":"spawn","req":1,"id":"k1","argv":[..],"env":{..},"cwd":"/workspace","log":"/run/sandgate/k1.log",
//    "capture":true,"output_limit":1048576,"stdin":"<base64>","timeout_ms":N}
//     -> {"req":1,"ok":true,"pid":<pid inside>} | {"req":1,"ok":false,"error":".."}
//     optional: capture (default false): stdout and stderr go to pipes that the
//       supervisor forwards as output events ("log" is then unused);
//       output_limit: bytes forwarded per stream (default 1 MiB), the rest is
//       read and dropped; stdin: bytes written to the child's stdin, which is
//       then closed (absent: /dev/null); timeout_ms: the supervisor SIGKILLs the
//       child and all its descendants at that deadline.
//   {"op":"signal","req":2,"id":"k1","signal":2,"group":true} -> {"req":2,"ok":true}
//   {"op":"kill","req":5,"id":"k1"} -> {"req":5,"ok":true}: SIGKILL to the child and every
//     descendant (setsid cannot escape it), ok even when it already ended
//   {"op":"extend","req":6,"expires_at":<unix s>} -> {"req":6,"ok":true}: new TTL deadline
//     (later or earlier), for the supervisor and the outer process's backstop
//   {"op":"open_egress","req":7} -> {"req":7,"ok":true}: egress opened while the sandbox runs: lo
//     up, 127.0.0.1:3128 listening, and the proxy variables under the env of every later spawn;
//     ok at once when already open
//   {"op":"ping","req":3} -> {"req":3,"ok":true}
// Processes (a spawn with "streams"): the supervisor keeps the last
// buffer_bytes of each output stream in a ring, the process's record after it
// ends (its exit and rings; the 64 most recent ended records), and serves any
// number of attachments (process_stream.hpp for what flows on them):
//   spawn with "streams":{"buffer_bytes":N,"stdin":true,"pty":{"cols":C,"rows":R}}: instead of
//     capture/log/stdin; stdout and stderr (one stream under a pty) go to rings, stdin stays open
//     (a pipe, or the pty) when asked for; the reply's data is the process's record
//   {"op":"attach","req":8,"id":"p1","since":[N,N]} -> {"req":8,"ok":true,"data":{"fd":N}}: a new
//     attachment, one end of a socketpair whose other end is the supervisor's descriptor N; the
//     gateway copies it (pidfd_getfd) and sends release_fd. Output from offset `since` per stream
//     (default 0: the oldest held), then the process's end.
//   {"op":"release_fd","req":9,"fd":N} -> ok: the supervisor closes its copy of an attachment's end
//     (also closed when the gateway's connection drops)
//   {"op":"processes","req":10} -> {"data":{"processes":[record, ...]}}
//   {"op":"wait","req":11,"id":"p1","timeout_ms":N} -> {"data":record} once it ended, or at the timeout
//   {"op":"write_stdin","req":12,"id":"p1","data":"<base64>","close":bool} -> ok once queued
//   {"op":"resize","req":13,"id":"p1","cols":C,"rows":R} -> ok
//   {"op":"forget","req":14,"id":"p1"} -> ok: killed if running, its record and attachments dropped
// Files (done by the supervisor as the sandbox user, inside its root; paths
// absolute, or relative to /workspace; descriptors handed out as for attach,
// released with release_fd; a failure's data is {"errno":N}):
//   {"op":"file_open","path"} -> data {stat..., "fd"}: the file, opened for reading
//   {"op":"file_lines","path","start","end"} -> data {"fd","size","eof"}: a memfd of those lines
//   {"op":"file_stat","path","follow":bool} -> data {"type","size","mode","mtime_ms","uid","gid"[,"target"]}
//   {"op":"file_list","path"} -> data {"fd","size","count","truncated"}: a memfd of a JSON array
//   {"op":"file_create","path","parents":bool} -> data {"fd","temp"}: a temporary file beside the path;
//     then {"op":"file_commit","temp","path"} renames it into place, or {"op":"file_abort","temp"}
//   {"op":"file_mkdir","path","parents":bool}, {"op":"file_rename","from","to","overwrite":bool},
//   {"op":"file_delete","path","recursive":bool} -> ok
//   {"op":"listening_ports"} -> data {"ports":[{"port","address"}]}: TCP listeners in the sandbox
//   record: {"id","pid","argv","cwd","pty":{"cols","rows"}|null,"stdin":bool,"buffer_bytes":N,
//            "started_ms","ended_ms"|null,"running":bool,"exit":{"code"|"signal","oom","timed_out"}|null,
//            "stdout":{"bytes","held","dropped"},"stderr":{...},"attachments":N}
//   {"op":"shutdown","req":4} -> {"req":4,"ok":true}, then everything ends
// supervisor -> gateway, output of a child spawned with capture (chunks of at
// most 64 KiB raw, every one before the child's exit event):
//   {"event":"output","id":"k1","stream":"stdout"|"stderr","data":"<base64>"}
// supervisor -> gateway, whenever a named child ends:
//   {"event":"exit","id":"k1","code":N} | {"event":"exit","id":"k1","signal":9,"oom":true}
//   plus "timed_out":true when timeout_ms killed it, "truncated":true when
//   captured output was not all forwarded (a stream passed output_limit, or no
//   gateway was connected to receive it), and "sandbox_ended":"expired"|"ended"
//   when the sandbox ending killed it (its TTL, or a shutdown or signal).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

namespace sandgate::sandboxing::control {

inline constexpr std::size_t max_frame_bytes = 1u << 20;
inline constexpr std::uint64_t default_output_limit_bytes = 1u << 20;  // per stream
inline constexpr std::size_t max_output_chunk_bytes = 64u << 10;       // raw bytes per output event

enum class frame_errc { frame_too_large = 1, not_json, not_an_object };
const std::error_category& frame_category() noexcept;
inline std::error_code make_error_code(frame_errc e) noexcept {
  return {static_cast<int>(e), frame_category()};
}

// The frame for one message; throws std::length_error past max_frame_bytes.
std::string encode_frame(const nlohmann::json& message);

// Incremental decoder: feed bytes as they arrive, take whole messages out.
class frame_decoder {
 public:
  // Appends received bytes.
  void feed(std::string_view bytes);
  // The next whole message, or nullopt when more bytes are needed or on error
  // (ec set; the stream is then unusable and should be closed).
  std::optional<nlohmann::json> next(std::error_code& ec);
  // Bytes held that do not yet form a whole frame.
  std::size_t buffered_bytes() const noexcept { return buffer_.size() - offset_; }

 private:
  std::string buffer_;
  std::size_t offset_ = 0;
};

// How a process spawned for the process API keeps its streams.
struct stream_options {
  std::uint64_t buffer_bytes = 1u << 20;                       // held per output stream
  bool stdin = false;                                          // stdin stays open for writes
  std::optional<std::pair<std::uint16_t, std::uint16_t>> pty;  // cols, rows: a terminal
};
inline constexpr std::uint64_t max_stream_buffer_bytes = 64u << 20;

struct spawn_request {
  std::uint64_t req = 0;
  std::string id;                          // the caller's name for the child, unique while it runs
  std::vector<std::string> argv;           // argv[0] without '/' is looked up in env PATH
  std::map<std::string, std::string> env;  // the whole environment (policy env.set underneath)
  std::string cwd = "/workspace";
  std::string log;       // inside path for stdout+stderr; empty: /dev/null
  bool capture = false;  // stdout and stderr forwarded as output events instead of log
  std::uint64_t output_limit_bytes = default_output_limit_bytes;  // per captured stream
  std::optional<std::string> stdin_data = std::nullopt;           // raw ("stdin" is base64); none: /dev/null
  std::optional<std::uint64_t> timeout_ms = std::nullopt;  // the supervisor kills the child's tree then
  std::optional<stream_options> streams = std::nullopt;    // a process with rings (see above)
};

struct kill_request {
  std::uint64_t req = 0;
  std::string id;
};

struct extend_request {
  std::uint64_t req = 0;
  std::int64_t expires_at = 0;  // unix seconds, the sandbox's new TTL deadline
};

struct signal_request {
  std::uint64_t req = 0;
  std::string id;
  int signal = 0;
  bool group = true;  // signal the child's whole process group
};

struct reply {
  std::uint64_t req = 0;
  bool ok = false;
  std::optional<int> pid;  // spawn: the child's pid inside the sandbox
  std::string error;
  nlohmann::json data;  // what an op answers with besides (null: nothing)
};

struct ready_event {
  std::string id;
  int pid = 0;        // host pid of the supervisor (pid 1 inside)
  int outer_pid = 0;  // host pid of the outer sandgate-sandbox that waits for it
  std::uint32_t host_uid = 0;
  std::uint32_t host_gid = 0;
  std::int64_t expires_at = 0;        // unix seconds
  std::uint64_t max_execution_s = 0;  // the policy's limit for one execution, enforced by the gateway
  std::vector<std::string> children;
  std::optional<int> egress_fd;  // in the supervisor: its socket on 127.0.0.1:3128
};

struct exit_event {
  std::string id;
  std::optional<int> code;    // set when the child exited
  std::optional<int> signal;  // set when a signal ended it
  bool oom = false;           // the cgroup's OOM killer ended it
  bool timed_out = false;     // the spawn's timeout_ms killed it
  bool truncated = false;     // captured output was not all forwarded
  std::string sandbox_ended;  // "expired" or "ended" when the sandbox's end killed it
};

enum class output_stream { standard_output, standard_error };
std::string_view to_string(output_stream stream) noexcept;  // "stdout" / "stderr"

struct output_event {
  std::string id;
  output_stream stream = output_stream::standard_output;
  std::string data;  // raw bytes ("data", base64 on the wire)
};

// Appends the frame of an output event to buffer (no intermediate JSON tree:
// the supervisor's hot path for captured output).
void append_output_frame(std::string& buffer, std::string_view id, output_stream stream,
                         std::string_view data);

void to_json(nlohmann::json& j, const spawn_request& m);
void from_json(const nlohmann::json& j, spawn_request& m);
void to_json(nlohmann::json& j, const signal_request& m);
void from_json(const nlohmann::json& j, signal_request& m);
void to_json(nlohmann::json& j, const reply& m);
void from_json(const nlohmann::json& j, reply& m);
void to_json(nlohmann::json& j, const ready_event& m);
void from_json(const nlohmann::json& j, ready_event& m);
void to_json(nlohmann::json& j, const exit_event& m);
void from_json(const nlohmann::json& j, exit_event& m);
void to_json(nlohmann::json& j, const kill_request& m);
void from_json(const nlohmann::json& j, kill_request& m);
void to_json(nlohmann::json& j, const extend_request& m);
void from_json(const nlohmann::json& j, extend_request& m);
void to_json(nlohmann::json& j, const output_event& m);
void from_json(const nlohmann::json& j, output_event& m);

}  // namespace sandgate::sandboxing::control

template <>
struct std::is_error_code_enum<sandgate::sandboxing::control::frame_errc> : std::true_type {};
