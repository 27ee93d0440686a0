#include "bash_process.hpp"

#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "sandgate_kernels/output_batcher.hpp"

extern char** environ;

namespace sandgate::shell_kernel {
namespace {

// bash's end of the status pipe: high, so that scripts using fds 3-9 never
// collide with it; closed for the commands themselves.
constexpr int status_fd_in_bash = 61;
constexpr std::size_t read_chunk_bytes = 64 * 1024;

std::string random_token() {
  std::random_device device;
  std::uniform_int_distribution<unsigned> digit(0, 15);
  std::string token = "__sandgate_status_";
  for (int i = 0; i < 24; ++i) {
    token.push_back("0123456789abcdef"[digit(device)]);
  }
  return token;
}

void check(int rc, const char* what) {
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

// Reads what is available now; returns bytes read, 0 on EOF, -1 if none yet.
ssize_t read_some(int fd, std::array<char, read_chunk_bytes>& buffer) {
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n >= 0) {
      return n;
    }
    if (errno == EINTR) {
      continue;
    }
    return -1;  // EAGAIN, or an error we treat as "nothing more"
  }
}

}  // namespace

bash_process::bash_process() : token_(random_token()) {
  auto in = make_pipe();
  auto out = make_pipe();
  auto err = make_pipe();
  auto status = make_pipe();

  posix_spawn_file_actions_t actions;
  check(posix_spawn_file_actions_init(&actions), "posix_spawn_file_actions_init");
  posix_spawn_file_actions_adddup2(&actions, in.read_end.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out.write_end.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.write_end.get(), STDERR_FILENO);
  posix_spawn_file_actions_adddup2(&actions, status.write_end.get(), status_fd_in_bash);

  posix_spawnattr_t attr;
  check(posix_spawnattr_init(&attr), "posix_spawnattr_init");
  sigset_t no_signals;
  sigemptyset(&no_signals);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &no_signals);  // the kernel blocks SIGINT; bash must not
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);  // own group: interrupts reach its commands
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  const char* bash_env = std::getenv("SANDGATE_SHELL_BASH");
  std::string bash = (bash_env != nullptr && *bash_env != '\0') ? bash_env : "/bin/bash";
  std::array<char*, 8> argv{const_cast<char*>(bash.c_str()),
                            const_cast<char*>("--norc"),
                            const_cast<char*>("--noprofile"),
                            const_cast<char*>("--noediting"),
                            const_cast<char*>("-i"),
                            const_cast<char*>("+m"),
                            nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, bash.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  check(rc, "posix_spawn(bash)");
  pid_ = pid;

  // Close our copies of bash's ends, so that its death shows as EOF.
  in.read_end.reset();
  out.write_end.reset();
  err.write_end.reset();
  status.write_end.reset();
  stdin_ = std::move(in.write_end);
  stdout_ = std::move(out.read_end);
  stderr_ = std::move(err.read_end);
  status_ = std::move(status.read_end);
  for (int fd : {stdout_.get(), stderr_.get(), status_.get()}) {
    set_nonblocking(fd);
  }

  // Quiet, non-paging, history-free; job-control warnings and prompts printed
  // before this line are dropped with the set-up output.
  const auto setup =
      run("PS1=''; PS2=''; PS4='+ '; unset PROMPT_COMMAND MAIL MAILCHECK; "
          "set +H +o history; export PAGER=cat GIT_PAGER=cat",
          [](output_stream, std::string_view) {});
  if (setup.shell_exited) {
    throw std::runtime_error("bash exited during set-up: " + bash);
  }
}

bash_process::~bash_process() {
  const pid_t pid = pid_.load();
  if (pid <= 0) {
    return;
  }
  stdin_.reset();  // EOF: an idle interactive bash exits
  ::kill(-pid, SIGHUP);
  for (int i = 0; i < 100; ++i) {
    if (::waitpid(pid, nullptr, WNOHANG) == pid) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(-pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

void bash_process::interrupt() noexcept {
  const pid_t pid = pid_.load();
  if (running_.load() && pid > 0) {
    ::kill(-pid, SIGINT);
  }
}

void bash_process::kill_group() noexcept {
  if (const pid_t pid = pid_.load(); pid > 0) {
    ::kill(-pid, SIGKILL);
  }
}

void bash_process::write_all(std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(stdin_.get(), text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw std::system_error(errno, std::generic_category(), "write(bash stdin)");
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

bool bash_process::read_status(int& exit_status) {
  const auto newline = status_buffer_.find('\n');
  if (newline == std::string::npos) {
    return false;
  }
  const std::string line = status_buffer_.substr(0, newline);
  status_buffer_.erase(0, newline + 1);
  if (!line.starts_with(token_ + " ")) {
    return false;  // not ours (cannot normally happen: the fd is closed for commands)
  }
  exit_status = std::atoi(line.c_str() + token_.size() + 1);
  return true;
}

int bash_process::reap() noexcept {
  const pid_t pid = pid_.exchange(-1);
  int status = 0;
  if (pid > 0) {
    ::kill(-pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status);
  }
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

command_result bash_process::run(std::string_view command_line, const output_handler& on_output) {
  command_result result;
  if (!alive()) {
    result.shell_exited = true;
    return result;
  }
  std::string script = "{ ";
  script.append(command_line);
  script += "\n} " + std::to_string(status_fd_in_bash) + ">&-\n";
  script += "printf '%s %d\\n' " + token_ + " \"$?\" >&" + std::to_string(status_fd_in_bash) + "\n";

  running_ = true;
  kernels::output_batcher batcher(on_output);
  std::array<char, read_chunk_bytes> buffer;
  try {
    write_all(script);
  } catch (const std::system_error&) {
    running_ = false;
    reap();
    result.shell_exited = true;
    return result;
  }

  // An output pipe at EOF (bash ran `exec >&-`) leaves the poll set.
  std::array<bool, 2> open{true, true};
  const auto drain = [&](int fd, output_stream stream) {
    for (;;) {
      const ssize_t n = read_some(fd, buffer);
      if (n == 0) {
        open[static_cast<std::size_t>(stream)] = false;
      }
      if (n <= 0) {
        return;
      }
      batcher.add(stream, std::string_view(buffer.data(), static_cast<std::size_t>(n)));
    }
  };

  for (;;) {
    std::array<pollfd, 3> fds{pollfd{open[0] ? stdout_.get() : -1, POLLIN, 0},
                              pollfd{open[1] ? stderr_.get() : -1, POLLIN, 0},
                              pollfd{status_.get(), POLLIN, 0}};
    const int ready = ::poll(fds.data(), fds.size(), batcher.poll_timeout_ms());
    if (ready < 0 && errno != EINTR) {
      throw std::system_error(errno, std::generic_category(), "poll(bash pipes)");
    }
    if (fds[0].revents != 0) {
      drain(stdout_.get(), output_stream::stdout_stream);
    }
    if (fds[1].revents != 0) {
      drain(stderr_.get(), output_stream::stderr_stream);
    }
    batcher.flush_due();
    if (fds[2].revents == 0) {
      continue;
    }
    const ssize_t n = read_some(status_.get(), buffer);
    if (n > 0) {
      status_buffer_.append(buffer.data(), static_cast<std::size_t>(n));
      if (!read_status(result.exit_status)) {
        continue;
      }
    } else if (n < 0) {
      continue;
    } else {
      result.shell_exited = true;  // status pipe closed: bash is gone
    }
    // Commands have finished: what they wrote is already in the pipes.
    drain(stdout_.get(), output_stream::stdout_stream);
    drain(stderr_.get(), output_stream::stderr_stream);
    batcher.flush_all();
    break;
  }
  running_ = false;
  if (result.shell_exited) {
    result.exit_status = reap();
  }
  return result;
}

}  // namespace sandgate::shell_kernel
