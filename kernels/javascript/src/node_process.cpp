#include "node_process.hpp"

#include <poll.h>
#include <unistd.h>
#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <iostream>
#include <stdexcept>
#include <system_error>

namespace sandgate::javascript_kernel {
namespace {

constexpr int command_fd_in_node = 3;
constexpr int event_fd_in_node = 4;
constexpr std::size_t read_chunk_bytes = 64 * 1024;

using kernels::child_pipe;
constexpr auto to_node = child_pipe::direction::to_child;
constexpr auto from_node = child_pipe::direction::from_child;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

node_process::node_process(const node_options& options)
    : node_({options.node, options.driver, options.language}, {{STDOUT_FILENO, from_node},
                                                               {STDERR_FILENO, from_node},
                                                               {command_fd_in_node, to_node},
                                                               {event_fd_in_node, from_node}}),
      commands_(node_.take_pipe(command_fd_in_node)),
      events_(node_.take_pipe(event_fd_in_node)),
      output_(node_.take_pipe(STDOUT_FILENO), node_.take_pipe(STDERR_FILENO)) {
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
  node_.reap();
}

bool node_process::send(const nl::json& command) {
  // false on EPIPE: Node is gone (SIGPIPE is ignored in the kernel).
  return kernels::write_all(commands_.get(),
                            encode_frame(command.dump(-1, ' ', false, nl::json::error_handler_t::replace)));
}

void node_process::interrupt() noexcept {
  if (waiting_.load() && node_.alive()) {
    std::int64_t none = 0;
    interrupted_at_ns_.compare_exchange_strong(none, now_ns());
    node_.signal_group(SIGINT);
  }
}

void node_process::kill_group() noexcept {
  node_.signal_group(SIGKILL);
}

wait_end node_process::wait(const frame_handler& on_frame, const kernels::output_handler& on_output) {
  if (!alive()) {
    return wait_end::exited;
  }
  waiting_ = true;
  interrupted_at_ns_ = 0;
  kernels::output_batcher batcher(on_output);
  std::array<char, read_chunk_bytes> buffer;
  const auto finish = [&](wait_end end) {
    // What Node's children wrote to the inherited fds 1 and 2.
    output_.drain_both(batcher);
    output_.finish(batcher);
    batcher.flush_all();
    waiting_ = false;
    interrupted_at_ns_ = 0;
    if (end != wait_end::frame) {
      node_.reap();
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
      output_.drain_both(batcher);
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
                              pollfd{output_.poll_fd(kernels::output_stream::stdout_stream), POLLIN, 0},
                              pollfd{output_.poll_fd(kernels::output_stream::stderr_stream), POLLIN, 0}};
    const int ready = ::poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno != EINTR) {
      throw std::system_error(errno, std::generic_category(), "poll(node pipes)");
    }
    if (fds[1].revents != 0) {
      output_.drain(kernels::output_stream::stdout_stream, batcher);
    }
    if (fds[2].revents != 0) {
      output_.drain(kernels::output_stream::stderr_stream, batcher);
    }
    if (fds[0].revents != 0) {
      for (;;) {
        const ssize_t n = kernels::read_available(events_.get(), buffer.data(), buffer.size());
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
