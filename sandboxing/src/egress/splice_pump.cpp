#include "splice_pump.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace sandgate::egress {

splice_pump::splice_pump(std::size_t pipe_bytes) {
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe2");
  read_end_.reset(fds[0]);
  write_end_.reset(fds[1]);
  const int size = ::fcntl(fds[1], F_SETPIPE_SZ, static_cast<int>(pipe_bytes));
  capacity_ = static_cast<std::size_t>(size > 0 ? size : ::fcntl(fds[1], F_GETPIPE_SZ));
}

splice_pump::result splice_pump::pump(int from, int to, std::size_t budget) {
  constexpr unsigned flags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
  result r;
  for (;;) {
    // EAGAIN from a read into a pipe that holds something may mean the
    // pipe's slots are full (a slot per page or fragment, however few bytes
    // it holds), not that `from` is empty: only with an empty pipe does it
    // say `from` has nothing, which an edge-triggered caller may wait on.
    bool nothing_to_read = false;
    if (!eof_ && in_pipe_ < capacity_ && r.moved + in_pipe_ < budget) {
      const bool pipe_was_empty = in_pipe_ == 0;
      const std::size_t room = std::min(capacity_ - in_pipe_, budget - r.moved - in_pipe_);
      const ssize_t n = ::splice(from, nullptr, write_end_.get(), nullptr, room, flags);
      if (n > 0) {
        in_pipe_ += static_cast<std::size_t>(n);
      } else if (n == 0) {
        eof_ = true;
      } else if (errno == EAGAIN) {
        nothing_to_read = pipe_was_empty;
      } else if (errno != EINTR) {
        r.next = wait::broken;
        return r;
      }
    }
    if (in_pipe_ > 0) {
      const ssize_t m = ::splice(read_end_.get(), nullptr, to, nullptr, in_pipe_, flags);
      if (m > 0) {
        in_pipe_ -= static_cast<std::size_t>(m);
        r.moved += static_cast<std::size_t>(m);
      } else if (m < 0 && errno == EAGAIN) {
        r.next = wait::writable;
        return r;
      } else if (m < 0 && errno != EINTR) {
        r.next = wait::broken;
        return r;
      }
    }
    if (eof_ && in_pipe_ == 0) {
      r.next = wait::ended;
      return r;
    }
    if (nothing_to_read) {
      r.next = wait::readable;
      return r;
    }
    if (in_pipe_ == 0 && r.moved >= budget) return r;  // its turn is over
  }
}

}  // namespace sandgate::egress
