// One persistent interactive bash, driven through pipes.
#pragma once

#include <atomic>
#include <string>
#include <string_view>

#include "sandgate_kernels/child_output.hpp"
#include "sandgate_kernels/child_process.hpp"
#include "sandgate_kernels/output_batcher.hpp"
#include "sandgate_kernels/pipe.hpp"

namespace sandgate::shell_kernel {

using kernels::output_stream;

struct command_result {
  int exit_status = 0;        // $? after the command line (130 after an interrupt)
  bool shell_exited = false;  // bash is gone (the command ran `exit`, or it was killed)
};

// bash runs as `bash --norc --noprofile --noediting -i +m` in its own process
// group, stdin a pipe from us, stdout and stderr pipes to us, and a status
// pipe on a high fd. Interactive mode gives terminal semantics without a
// terminal: SIGINT aborts the whole command line being run and bash goes on
// reading the next one; state (cwd, variables, functions) persists.
// After each command line we send a sentinel that prints a random token and
// $? on the status pipe: that is how we know the command line ended.
// Not thread-safe, except interrupt().
class bash_process {
 public:
  using output_handler = kernels::output_handler;

  // Spawns bash (path from $SANDGATE_SHELL_BASH or /bin/bash) and runs its
  // set-up; throws std::system_error / std::runtime_error on failure.
  bash_process();
  ~bash_process();
  bash_process(const bash_process&) = delete;
  bash_process& operator=(const bash_process&) = delete;

  // Runs one line of bash; on_output gets stdout/stderr as it arrives (as
  // UTF-8 text: kernels::child_output).
  // Returns when the line has finished or bash has died.
  command_result run(std::string_view command_line, const output_handler& on_output);

  // SIGINT to bash's process group (the shell and its foreground commands).
  // Safe from any thread; a no-op while no command runs.
  void interrupt() noexcept;

  // SIGKILL to bash's process group: a running command line ends at once and
  // run() reports shell_exited. Safe from any thread.
  void kill_group() noexcept;

  bool alive() const noexcept { return bash_.alive(); }

 private:
  bool read_status(int& exit_status);  // true once a full status line arrived

  std::string token_;  // random marker that starts each status line
  kernels::child_process bash_;
  kernels::unique_fd stdin_;   // our end of bash's stdin
  kernels::unique_fd status_;  // our end of the status pipe
  kernels::child_output output_;
  std::string status_buffer_;  // partial status line
  std::atomic<bool> running_{false};
};

}  // namespace sandgate::shell_kernel
