#include "sandgate_kernels/child_process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <system_error>
#include <thread>

extern char** environ;

namespace sandgate::kernels {
namespace {

void check(int rc, const std::string& what) {
  if (rc != 0) {
    throw std::system_error(rc, std::generic_category(), what);
  }
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    throw std::system_error(errno, std::generic_category(), "fcntl(O_NONBLOCK)");
  }
}

// posix_spawn's two attribute objects, destroyed on every path.
struct spawn_setup {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;

  spawn_setup() {
    check(posix_spawn_file_actions_init(&actions), "posix_spawn_file_actions_init");
    if (const int rc = posix_spawnattr_init(&attr); rc != 0) {
      posix_spawn_file_actions_destroy(&actions);
      check(rc, "posix_spawnattr_init");
    }
  }
  ~spawn_setup() {
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
  }
  spawn_setup(const spawn_setup&) = delete;
  spawn_setup& operator=(const spawn_setup&) = delete;
};

}  // namespace

child_process::child_process(const std::vector<std::string>& argv, std::initializer_list<child_pipe> pipes) {
  if (argv.empty()) {
    throw std::invalid_argument("child_process: no program");
  }
  spawn_setup setup;
  // The child's ends: closed here once it has them, so that its death shows as EOF.
  std::vector<unique_fd> child_ends;
  bool stdin_taken = false;
  for (const child_pipe& pipe : pipes) {
    pipe_pair ends = make_pipe();
    const bool to_child = pipe.way == child_pipe::direction::to_child;
    unique_fd& theirs = to_child ? ends.read_end : ends.write_end;
    unique_fd& ours = to_child ? ends.write_end : ends.read_end;
    if (!to_child) {
      set_nonblocking(ours.get());
    }
    check(posix_spawn_file_actions_adddup2(&setup.actions, theirs.get(), pipe.fd_in_child),
          "posix_spawn_file_actions_adddup2");
    stdin_taken = stdin_taken || pipe.fd_in_child == STDIN_FILENO;
    child_ends.push_back(std::move(theirs));
    ends_.emplace_back(pipe.fd_in_child, std::move(ours));
  }
  if (!stdin_taken) {
    check(posix_spawn_file_actions_addopen(&setup.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0),
          "posix_spawn_file_actions_addopen(/dev/null)");
  }

  sigset_t no_signals;
  sigemptyset(&no_signals);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&setup.attr, &no_signals);  // the kernel blocks SIGINT; the child must not
  posix_spawnattr_setsigdefault(&setup.attr, &defaults);
  posix_spawnattr_setpgroup(&setup.attr, 0);  // own group: interrupts reach what it started
  posix_spawnattr_setflags(&setup.attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> args;
  for (const std::string& arg : argv) {
    args.push_back(const_cast<char*>(arg.c_str()));
  }
  args.push_back(nullptr);
  pid_t pid = -1;
  check(posix_spawnp(&pid, argv[0].c_str(), &setup.actions, &setup.attr, args.data(), environ),
        "posix_spawnp(" + argv[0] + ")");
  pid_ = pid;
}

child_process::~child_process() {
  reap();
}

unique_fd child_process::take_pipe(int fd_in_child) {
  const auto it = std::find_if(ends_.begin(), ends_.end(),
                               [fd_in_child](const auto& end) { return end.first == fd_in_child; });
  return it == ends_.end() ? unique_fd() : std::move(it->second);
}

void child_process::signal_group(int signal) const noexcept {
  if (const pid_t pid = pid_.load(); pid > 0) {
    ::kill(-pid, signal);
  }
}

void child_process::record_exit(int wait_status) noexcept {
  exit_status_ = WIFEXITED(wait_status)     ? WEXITSTATUS(wait_status)
                 : WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status)
                                            : 1;
}

int child_process::reap() noexcept {
  const pid_t pid = pid_.exchange(-1);
  if (pid > 0) {
    ::kill(-pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    record_exit(status);
  }
  return exit_status_;
}

bool child_process::wait_exit(std::chrono::milliseconds timeout) noexcept {
  const pid_t pid = pid_.load();
  if (pid <= 0) {
    return true;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      pid_ = -1;
      record_exit(status);
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

ssize_t read_available(int fd, char* buffer, std::size_t size) noexcept {
  for (;;) {
    const ssize_t n = ::read(fd, buffer, size);
    if (n >= 0 || errno != EINTR) {
      return n;
    }
  }
}

bool write_all(int fd, std::string_view bytes) noexcept {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace sandgate::kernels
