// The control protocol between the gateway and a sandbox supervisor, over the
// unix stream socket given by --control. Each frame is a u32 big-endian length
// followed by that many bytes of one JSON object; at most max_frame_bytes.
//
// supervisor -> gateway, first on every connection:
//   {"event":"ready","id":..,"pid":<host pid of the supervisor>,"outer_pid":..,
//    "host_uid":N,"host_gid":N,"expires_at":<unix s>,"max_execution_s":N,"children":["k1",..]}
// gateway -> supervisor (a "req" number is echoed in the reply):
//   {"op":"spawn","req":1,"id":"k1","argv":[..],"env":{..},"cwd":"/workspace","log":"/run/sandgate/k1.log"}
//     -> {"req":1,"ok":true,"pid":<pid inside>} | {"req":1,"ok":false,"error":".."}
//   {"op":"signal","req":2,"id":"k1","signal":2,"group":true} -> {"req":2,"ok":true}
//   {"op":"ping","req":3} -> {"req":3,"ok":true}
//   {"op":"shutdown","req":4} -> {"req":4,"ok":true}, then everything ends
// supervisor -> gateway, whenever a named child ends:
//   {"event":"exit","id":"k1","code":N} | {"event":"exit","id":"k1","signal":9,"oom":true}
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

struct spawn_request {
  std::uint64_t req = 0;
  std::string id;                          // the caller's name for the child, unique while it runs
  std::vector<std::string> argv;           // argv[0] without '/' is looked up in env PATH
  std::map<std::string, std::string> env;  // the whole environment (policy env.set underneath)
  std::string cwd = "/workspace";
  std::string log;  // inside path for stdout+stderr; empty: /dev/null
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
};

struct exit_event {
  std::string id;
  std::optional<int> code;    // set when the child exited
  std::optional<int> signal;  // set when a signal ended it
  bool oom = false;           // the cgroup's OOM killer ended it
};

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

}  // namespace sandgate::sandboxing::control

template <>
struct std::is_error_code_enum<sandgate::sandboxing::control::frame_errc> : std::true_type {};
