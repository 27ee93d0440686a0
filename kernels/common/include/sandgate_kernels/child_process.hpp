// A kernel's child process (bash, Node) that runs its cells.
#pragma once

#include <sys/types.h>
#include <atomic>
#include <chrono>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sandgate_kernels/pipe.hpp"

namespace sandgate::kernels {

// A pipe between the kernel and the child, at `fd_in_child` in the child.
struct child_pipe {
  enum class direction { to_child, from_child };
  int fd_in_child;
  direction way;
};

// The child runs in a process group of its own (an interrupt or a kill
// reaches whatever it started), with no signal blocked and SIGINT and SIGPIPE
// at their defaults (the kernel blocks the one and ignores the other), the
// kernel's environment, its pipes at the fds asked for, and stdin /dev/null
// unless a pipe takes fd 0. The kernel's ends of the pipes are close-on-exec;
// the ends it reads are non-blocking, the ends it writes blocking.
// Not thread-safe, except signal_group() and alive().
class child_process {
 public:
  // Spawns argv (argv[0] looked up in PATH unless it has a '/'); throws
  // std::system_error naming the program.
  child_process(const std::vector<std::string>& argv, std::initializer_list<child_pipe> pipes);
  ~child_process();  // SIGKILL to the group, then reap
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  // The kernel's end of the pipe at `fd_in_child`, once; an empty fd after that.
  unique_fd take_pipe(int fd_in_child);

  // Sends `signal` to the child's group; a no-op once the child is reaped. Any thread.
  void signal_group(int signal) const noexcept;

  // SIGKILL to the group, then waits for the child (once): its exit status,
  // 128+n for signal n. Later calls return the same status.
  int reap() noexcept;

  // Waits up to `timeout` for the child to exit by itself; true (and reaped)
  // if it did.
  bool wait_exit(std::chrono::milliseconds timeout) noexcept;

  bool alive() const noexcept { return pid_.load() > 0; }
  int exit_status() const noexcept { return exit_status_; }  // after reap(); 128+n for signal n

 private:
  void record_exit(int wait_status) noexcept;

  std::atomic<pid_t> pid_{-1};
  int exit_status_ = 0;
  std::vector<std::pair<int, unique_fd>> ends_;  // fd in the child, the kernel's end
};

// Reads what `fd` (non-blocking) holds now, up to `size` bytes: the count,
// 0 at end of file, -1 when nothing is there yet (or on an error, left in errno).
ssize_t read_available(int fd, char* buffer, std::size_t size) noexcept;

// Writes all of `bytes` to a blocking fd; false on an error (errno says which:
// EPIPE once the reader is gone, as the kernels ignore SIGPIPE).
bool write_all(int fd, std::string_view bytes) noexcept;

}  // namespace sandgate::kernels
