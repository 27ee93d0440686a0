// A child process's stdout and stderr, read into stream messages.
#pragma once

#include <array>
#include <vector>

#include "sandgate_kernels/output_batcher.hpp"
#include "sandgate_kernels/pipe.hpp"
#include "sandgate_kernels/utf8_chunker.hpp"

namespace sandgate::kernels {

// The kernel's ends of a child's stdout and stderr pipes (non-blocking).
// What they hold goes to an output_batcher as text: each stream cut at UTF-8
// boundaries, invalid bytes as U+FFFD. A pipe at end of file (the child
// closed it, or is gone) leaves the poll set.
class child_output {
 public:
  child_output(unique_fd stdout_end, unique_fd stderr_end);

  // The pipe's fd for poll while it is open; -1 (which poll skips) after.
  int poll_fd(output_stream stream) const noexcept;

  // Reads what the pipe holds now into `batcher`.
  void drain(output_stream stream, output_batcher& batcher);
  void drain_both(output_batcher& batcher);

  // Adds what each stream held back (the start of a UTF-8 sequence cut at
  // the end) to `batcher`, as U+FFFD.
  void finish(output_batcher& batcher);

 private:
  std::array<unique_fd, 2> pipes_;  // by output_stream
  std::array<bool, 2> open_{true, true};
  std::array<utf8_chunker, 2> text_;
  std::vector<char> buffer_;
};

}  // namespace sandgate::kernels
