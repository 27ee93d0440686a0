// What the supervisor keeps about a process of the process API (a spawn with
// "streams"), from its start until the gateway forgets it or it is among the
// oldest ended ones: how it was started, its output rings, its stdin, its
// attachments and, once it ended, how. See control_protocol.hpp ("Processes")
// and process_stream.hpp (what flows on an attachment).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "output_ring.hpp"
#include "sandboxing/control_protocol.hpp"
#include "sandboxing/process_stream.hpp"
#include "sandboxing/unique_fd.hpp"

namespace sandgate::sandboxing::detail {

inline constexpr std::size_t max_ended_processes = 64;
inline constexpr std::size_t max_attachments_per_process = 16;
inline constexpr std::size_t max_attachments = 256;
inline constexpr std::uint64_t max_ring_bytes_total = 256u << 20;  // all processes' capacities
inline constexpr std::size_t max_process_stdin_bytes = 1u << 20;   // queued for one process
inline constexpr std::size_t attachment_out_bytes = 256u << 10;    // framed per refill

// One attachment: the supervisor's end of its socketpair.
struct attachment {
  unique_fd socket;              // non-blocking
  std::string process;           // the process's id
  std::uint64_t cursor[2] = {};  // the next offset of each stream to send
  std::string out;               // framed bytes not yet sent
  std::size_t out_sent = 0;
  process_stream::frame_decoder in;
  std::uint32_t interest = 0;  // what the epoll set has for it
  bool exit_sent = false;
};

// Milliseconds since the epoch, for records people read.
[[nodiscard]] std::int64_t wall_clock_ms();

struct stream_process {
  std::string id;
  pid_t pid = 0;
  std::vector<std::string> argv;
  std::string cwd;
  control::stream_options options;
  output_ring rings[2];
  bool paused[2] = {};  // reading its pipe stopped: the slowest attachment is a ring behind
  unique_fd stdin_fd;   // the write end of its stdin pipe, or a copy of its pty's master
  bool stdin_watched = false;
  std::string stdin_pending;  // written as the process reads
  bool stdin_close_after = false;
  std::int64_t started_ms = 0;
  std::optional<std::int64_t> ended_ms;
  std::optional<control::exit_event> exit;  // once it ended and its output was read to the end
  std::vector<int> attachments;             // their sockets, keys of supervisor::attachments_

  explicit stream_process(std::uint64_t buffer_bytes)
      : rings{output_ring(buffer_bytes), output_ring(buffer_bytes)} {}
};

}  // namespace sandgate::sandboxing::detail
