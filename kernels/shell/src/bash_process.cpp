#include "bash_process.hpp"

#include <poll.h>
#include <unistd.h>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <system_error>

namespace sandgate::shell_kernel {
namespace {

// bash's end of the status pipe: high, so that scripts using fds 3-9 never
// collide with it; closed for the commands themselves.
constexpr int status_fd_in_bash = 61;
constexpr std::size_t status_read_bytes = 4096;

std::string random_token() {
  std::random_device device;
  std::uniform_int_distribution<unsigned> digit(0, 15);
  std::string token = "__sandgate_status_";
  for (int i = 0; i < 24; ++i) {
    token.push_back("0123456789abcdef"[digit(device)]);
  }
  return token;
}

std::string bash_path() {
  const char* bash_env = std::getenv("SANDGATE_SHELL_BASH");
  return (bash_env != nullptr && *bash_env != '\0') ? bash_env : "/bin/bash";
}

using kernels::child_pipe;
constexpr auto to_bash = child_pipe::direction::to_child;
constexpr auto from_bash = child_pipe::direction::from_child;

}  // namespace

bash_process::bash_process()
    : token_(random_token()),
      bash_({bash_path(), "--norc", "--noprofile", "--noediting", "-i", "+m"},
            {{STDIN_FILENO, to_bash},
             {STDOUT_FILENO, from_bash},
             {STDERR_FILENO, from_bash},
             {status_fd_in_bash, from_bash}}),
      stdin_(bash_.take_pipe(STDIN_FILENO)),
      status_(bash_.take_pipe(status_fd_in_bash)),
      output_(bash_.take_pipe(STDOUT_FILENO), bash_.take_pipe(STDERR_FILENO)) {
  // Quiet, non-paging, history-free; job-control warnings and prompts printed
  // before this line are dropped with the set-up output.
  const auto setup =
      run("PS1=''; PS2=''; PS4='+ '; unset PROMPT_COMMAND MAIL MAILCHECK; "
          "set +H +o history; export PAGER=cat GIT_PAGER=cat",
          [](output_stream, std::string_view) {});
  if (setup.shell_exited) {
    throw std::runtime_error("bash exited during set-up: " + bash_path());
  }
}

bash_process::~bash_process() {
  if (!bash_.alive()) {
    return;
  }
  stdin_.reset();  // EOF: an idle interactive bash exits
  bash_.signal_group(SIGHUP);
  bash_.wait_exit(std::chrono::seconds(1));  // then bash_ kills what is left
}

void bash_process::interrupt() noexcept {
  if (running_.load()) {
    bash_.signal_group(SIGINT);
  }
}

void bash_process::kill_group() noexcept {
  bash_.signal_group(SIGKILL);
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
  if (!kernels::write_all(stdin_.get(), script)) {
    running_ = false;
    result.exit_status = bash_.reap();
    result.shell_exited = true;
    return result;
  }

  std::array<char, status_read_bytes> buffer;
  for (;;) {
    std::array<pollfd, 3> fds{pollfd{output_.poll_fd(output_stream::stdout_stream), POLLIN, 0},
                              pollfd{output_.poll_fd(output_stream::stderr_stream), POLLIN, 0},
                              pollfd{status_.get(), POLLIN, 0}};
    const int ready = ::poll(fds.data(), fds.size(), batcher.poll_timeout_ms());
    if (ready < 0 && errno != EINTR) {
      throw std::system_error(errno, std::generic_category(), "poll(bash pipes)");
    }
    if (fds[0].revents != 0) {
      output_.drain(output_stream::stdout_stream, batcher);
    }
    if (fds[1].revents != 0) {
      output_.drain(output_stream::stderr_stream, batcher);
    }
    batcher.flush_due();
    if (fds[2].revents == 0) {
      continue;
    }
    const ssize_t n = kernels::read_available(status_.get(), buffer.data(), buffer.size());
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
    output_.drain_both(batcher);
    output_.finish(batcher);
    batcher.flush_all();
    break;
  }
  running_ = false;
  if (result.shell_exited) {
    result.exit_status = bash_.reap();
  }
  return result;
}

}  // namespace sandgate::shell_kernel
