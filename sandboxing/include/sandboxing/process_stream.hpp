// What flows on a process attachment: the socketpair between the supervisor
// and the gateway made by the control protocol's "attach" op. Both ways it is
// a sequence of frames, a kind byte, a u32 big-endian length and that many
// bytes (at most max_attach_payload_bytes):
//   supervisor -> gateway: stdout and stderr bytes as the process wrote them
//     (a pty's output is stdout), and events as JSON text:
//       {"event":"attached","id","pty":bool,"running":bool,
//        "stdout":{"from":N,"dropped":N},"stderr":{...}} first: the offsets the
//        output starts at, and how many bytes before them are no longer held;
//       {"event":"exit","code"|"signal","oom","timed_out","stdout_bytes","stderr_bytes"}
//        last, once all output went out; the supervisor then closes its end.
//   gateway -> supervisor: stdin bytes, and controls as JSON text:
//       {"op":"close_stdin"} (a pipe is closed after what came before it;
//        a pty gets its end-of-file character), {"op":"resize","cols","rows"},
//       {"op":"signal","signal":N} (to the process group).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sandgate::sandboxing::process_stream {

enum class frame_kind : std::uint8_t {
  stdin_data = 0,
  stdout_data = 1,
  stderr_data = 2,
  event = 3,
  control = 4
};

inline constexpr std::size_t frame_header_bytes = 5;
inline constexpr std::size_t max_attach_payload_bytes = 1u << 20;

// Appends one frame (payload at most max_attach_payload_bytes).
void append_frame(std::string& out, frame_kind kind, std::string_view payload);

struct frame {
  frame_kind kind = frame_kind::stdin_data;
  std::string_view payload;  // valid until the decoder is fed again
};

// Incremental decoder of a stream of frames.
class frame_decoder {
 public:
  void feed(std::string_view bytes);
  // The next whole frame, nothing when more bytes are needed; `bad` is set
  // (and the stream is unusable) for an unknown kind or an oversized frame.
  std::optional<frame> next(bool& bad);
  [[nodiscard]] std::size_t buffered_bytes() const noexcept { return buffer_.size() - offset_; }

 private:
  std::string buffer_;
  std::size_t offset_ = 0;
};

}  // namespace sandgate::sandboxing::process_stream
