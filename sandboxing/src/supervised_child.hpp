// What the supervisor keeps about one named child while it runs and while
// its captured output drains after it ended.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "sandboxing/control_protocol.hpp"
#include "sandboxing/unique_fd.hpp"

namespace sandgate::sandboxing::detail {

using steady_time = std::chrono::steady_clock::time_point;

// The supervisor's read end of a captured stdout or stderr pipe.
struct captured_stream {
  unique_fd fd;                  // non-blocking; empty once at EOF or given up
  std::uint64_t read_bytes = 0;  // bytes read from the pipe so far
  bool watched = false;          // registered for EPOLLIN right now
};

struct supervised_child {
  std::string id;
  pid_t pid = 0;       // 0 once reaped
  pid_t sid = 0;       // its session (its first pid), for killing without a cgroup
  std::string cgroup;  // its own cgroup ("c<N>"), empty without tracking
  bool capture = false;
  bool streamed = false;  // a process of the process API: its streams go to its rings (stream_process)
  std::uint64_t output_limit_bytes = control::default_output_limit_bytes;
  captured_stream streams[2];  // stdout, stderr (index = control::output_stream)
  unique_fd stdin_fd;          // non-blocking write end, until all of stdin_data is written
  std::string stdin_data;
  std::size_t stdin_written = 0;
  std::optional<steady_time> timeout_at;   // the spawn's timeout_ms deadline, while it runs
  std::optional<steady_time> drain_until;  // after it ended: how long to wait for EOF on its pipes
  bool tree_killed_for_drain = false;      // the drain cap passed once: descendants were killed
  bool timed_out = false;
  bool truncated = false;
  std::optional<control::exit_event> ended;  // its status once reaped, reported after the pipes close

  bool streams_open() const noexcept { return streams[0].fd || streams[1].fd; }
};

}  // namespace sandgate::sandboxing::detail
