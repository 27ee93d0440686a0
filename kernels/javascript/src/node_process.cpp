#include "node_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <cerrno>
#include <csignal>
#include <iostream>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "sandgate_kernels/utf8_chunker.hpp"

extern char** environ;

namespace sandgate::javascript_kernel {
namespace {

constexpr int command_fd_in_node = 3;
constexpr int event_fd_in_node = 4;
constexpr std::size_t read_chunk_bytes = 64 * 1024;

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

// Reads what is available now: bytes read, 0 on EOF, -1 if none yet.
ssize_t read_some(int fd, std::array<char, read_chunk_bytes>& buffer) {
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n >= 0 || errno != EINTR) {
      return n;
    }
  }
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

node_process::node_process(const node_options& options) {
  auto commands = kernels::make_pipe();
  auto events = kernels::make_pipe();
  auto out = kernels::make_pipe();
  auto err = kernels::make_pipe();

  posix_spawn_file_actions_t actions;
  check(posix_spawn_file_actions_init(&actions), "posix_spawn_file_actions_init");
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write_end.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.write_end.get(), STDERR_FILENO);
  posix_spawn_file_actions_adddup2(&actions, commands.read_end.get(), command_fd_in_node);
  posix_spawn_file_actions_adddup2(&actions, events.write_end.get(), event_fd_in_node);

  posix_spawnattr_t attr;
  check(posix_spawnattr_init(&attr), "posix_spawnattr_init");
  sigset_t no_signals;
  sigemptyset(&no_signals);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &no_signals);  // the kernel blocks SIGINT; Node must not
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);  // own group: an interrupt reaches Node's children too
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> argv{const_cast<char*>(options.node.c_str()), const_cast<char*>(options.driver.c_str()),
                          const_cast<char*>(options.language.c_str()), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, options.node.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  check(rc, ("posix_spawnp(" + options.node + ")").c_str());
  pid_ = pid;

  // Our copies of Node's ends go, so that its death shows as EOF.
  commands_ = std::move(commands.write_end);
  events_ = std::move(events.read_end);
  stdout_ = std::move(out.read_end);
  stderr_ = std::move(err.read_end);
  for (int fd : {events_.get(), stdout_.get(), stderr_.get()}) {
    set_nonblocking(fd);
  }

  std::string early_output;
  const kernels::output_handler keep = [&early_output](kernels::output_stream, std::string_view bytes) {
    if (early_output.size() < 4096) {
      early_output.append(bytes.substr(0, 4096));
    }
  };
  std::string fatal;
  const auto end = wait(
      [this, &fatal](nl::json& frame) {
        const auto type = frame.value("type", "");
        if (type == "fatal") {
          fatal = frame.value("message", "the driver failed");
        } else if (type == "ready") {
          ready_ = std::move(frame);
        }
        return type == "ready" || type == "fatal";
      },
      keep);
  if (end != wait_end::frame || !fatal.empty()) {
    throw std::runtime_error(options.node + " " + options.driver + " did not start" +
                             (fatal.empty() ? "" : ": " + fatal) +
                             (early_output.empty() ? "" : "; it wrote: " + early_output));
  }
}

node_process::~node_process() {
  kill_group();
  reap();
}

bool node_process::send(const nl::json& command) {
  const std::string frame = encode_frame(command.dump(-1, ' ', false, nl::json::error_handler_t::replace));
  std::string_view rest = frame;
  while (!rest.empty()) {
    const ssize_t n = ::write(commands_.get(), rest.data(), rest.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return false;  // EPIPE: Node is gone (SIGPIPE is ignored in the kernel)
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

void node_process::interrupt() noexcept {
  const pid_t pid = pid_.load();
  if (waiting_.load() && pid > 0) {
    std::int64_t none = 0;
    interrupted_at_ns_.compare_exchange_strong(none, now_ns());
    ::kill(-pid, SIGINT);
  }
}

void node_process::kill_group() noexcept {
  if (const pid_t pid = pid_.load(); pid > 0) {
    ::kill(-pid, SIGKILL);
  }
}

void node_process::reap() noexcept {
  const pid_t pid = pid_.exchange(-1);
  if (pid <= 0) {
    return;
  }
  ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

wait_end node_process::wait(const frame_handler& on_frame, const kernels::output_handler& on_output) {
  if (!alive()) {
    return wait_end::exited;
  }
  waiting_ = true;
  interrupted_at_ns_ = 0;
  kernels::output_batcher batcher(on_output);
  std::array<kernels::utf8_chunker, 2> raw_text;
  std::array<char, read_chunk_bytes> buffer;
  std::array<bool, 2> raw_open{true, true};
  const std::array<int, 2> raw_fds{stdout_.get(), stderr_.get()};

  // What Node's children wrote to the inherited fds 1 and 2.
  const auto drain_raw = [&](std::size_t which) {
    while (raw_open[which]) {
      const ssize_t n = read_some(raw_fds[which], buffer);
      if (n == 0) {
        raw_open[which] = false;
      }
      if (n <= 0) {
        return;
      }
      const std::string text =
          raw_text[which].feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
      if (!text.empty()) {
        batcher.add(static_cast<kernels::output_stream>(which), text);
      }
    }
  };
  const auto finish = [&](wait_end end) {
    drain_raw(0);
    drain_raw(1);
    batcher.flush_all();
    waiting_ = false;
    interrupted_at_ns_ = 0;
    if (end != wait_end::frame) {
      reap();
    }
    return end;
  };

  bool events_open = true;
  for (;;) {
    while (auto payload = decoder_.next()) {
      nl::json frame = nl::json::parse(*payload, nullptr, false);
      if (frame.is_discarded() || !frame.is_object()) {
        std::cerr << "sandgate-javascript: the driver sent a frame that is not a JSON object\n";
        continue;
      }
      if (frame.value("type", "") == "stream") {
        const auto& text = frame["text"];
        if (text.is_string()) {
          batcher.add(frame.value("name", "") == "stderr" ? kernels::output_stream::stderr_stream
                                                          : kernels::output_stream::stdout_stream,
                      text.get_ref<const std::string&>());
        }
        continue;
      }
      // Whatever was written before this frame goes out first.
      drain_raw(0);
      drain_raw(1);
      batcher.flush_all();
      if (on_frame(frame)) {
        return finish(wait_end::frame);
      }
    }
    if (decoder_.failed()) {
      std::cerr << "sandgate-javascript: the driver announced a frame over " << max_frame_bytes
                << " bytes; ending it\n";
      kill_group();
      return finish(wait_end::exited);
    }
    if (!events_open) {
      return finish(wait_end::exited);  // everything Node sent has been handled
    }

    int timeout_ms = batcher.poll_timeout_ms();
    const std::int64_t interrupted = interrupted_at_ns_.load();
    if (interrupted != 0) {
      const auto grace_end = interrupted + std::chrono::nanoseconds(interrupt_grace).count();
      const std::int64_t left_ms = (grace_end - now_ns()) / 1000000;
      if (left_ms <= 0) {
        kill_group();
        return finish(wait_end::killed_after_interrupt);
      }
      timeout_ms =
          timeout_ms < 0 ? static_cast<int>(left_ms) : std::min(timeout_ms, static_cast<int>(left_ms));
    } else if (timeout_ms < 0 || timeout_ms > 100) {
      timeout_ms = 100;  // notice an interrupt's grace time starting
    }
    std::array<pollfd, 3> fds{pollfd{events_.get(), POLLIN, 0},
                              pollfd{raw_open[0] ? raw_fds[0] : -1, POLLIN, 0},
                              pollfd{raw_open[1] ? raw_fds[1] : -1, POLLIN, 0}};
    const int ready = ::poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno != EINTR) {
      throw std::system_error(errno, std::generic_category(), "poll(node pipes)");
    }
    if (fds[1].revents != 0) {
      drain_raw(0);
    }
    if (fds[2].revents != 0) {
      drain_raw(1);
    }
    if (fds[0].revents != 0) {
      for (;;) {
        const ssize_t n = read_some(events_.get(), buffer);
        if (n > 0) {
          decoder_.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
          continue;
        }
        if (n == 0) {
          events_open = false;  // Node is gone; decode what it sent, then report
        }
        break;
      }
    }
    batcher.flush_due();
  }
}

}  // namespace sandgate::javascript_kernel
