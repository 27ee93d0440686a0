// One direction of a byte relay between two non-blocking descriptors
// (sockets), through a pipe of its own with splice(2): bytes move as page
// references, never through user space. The egress proxy pumps each
// proxied connection with two of these and decides when to call pump()
// again from what it returns (the descriptor to wait for).
#pragma once

#include <cstddef>

#include "sandboxing/unique_fd.hpp"

namespace sandgate::egress {

class splice_pump {
 public:
  enum class wait { none, readable, writable, ended, broken };
  struct result {
    std::size_t moved = 0;  // bytes written to `to` by this call
    wait next = wait::none;
  };

  // The pipe: close-on-exec, non-blocking, `pipe_bytes` asked with
  // F_SETPIPE_SZ (the system's default kept if that is refused). Throws
  // std::system_error when no pipe can be made.
  explicit splice_pump(std::size_t pipe_bytes);

  // Moves bytes from `from` to `to` until it must wait: for `from` to be
  // readable (nothing in the pipe, nothing to read), for `to` to be
  // writable; or until `from` ended and the pipe is empty (ended: the
  // caller shuts `to` down for writing), `to` failed or a read error
  // (broken: nothing more moves this way, what is in the pipe is dropped),
  // or `budget` bytes moved (none: call again). It reads no more than
  // `budget` allows, so a call moves at most `budget` bytes plus what the
  // pipe held when it began.
  result pump(int from, int to, std::size_t budget);

  [[nodiscard]] std::size_t in_pipe() const noexcept { return in_pipe_; }

 private:
  sandboxing::unique_fd read_end_;
  sandboxing::unique_fd write_end_;
  std::size_t capacity_ = 0;
  std::size_t in_pipe_ = 0;
  bool eof_ = false;
};

}  // namespace sandgate::egress
