#include "sandgate_kernels/child_output.hpp"

#include <utility>

#include "sandgate_kernels/child_process.hpp"

namespace sandgate::kernels {
namespace {

constexpr std::size_t read_chunk_bytes = 64 * 1024;

std::size_t index_of(output_stream stream) {
  return stream == output_stream::stderr_stream ? 1 : 0;
}

}  // namespace

child_output::child_output(unique_fd stdout_end, unique_fd stderr_end)
    : pipes_{std::move(stdout_end), std::move(stderr_end)}, buffer_(read_chunk_bytes) {}

int child_output::poll_fd(output_stream stream) const noexcept {
  const std::size_t which = index_of(stream);
  return open_[which] ? pipes_[which].get() : -1;
}

void child_output::drain(output_stream stream, output_batcher& batcher) {
  const std::size_t which = index_of(stream);
  while (open_[which]) {
    const ssize_t n = read_available(pipes_[which].get(), buffer_.data(), buffer_.size());
    if (n == 0) {
      open_[which] = false;
    }
    if (n <= 0) {
      return;  // EAGAIN (or an error taken for "nothing more") or end of file
    }
    const std::string text = text_[which].feed(std::string_view(buffer_.data(), static_cast<std::size_t>(n)));
    if (!text.empty()) {
      batcher.add(stream, text);
    }
  }
}

void child_output::drain_both(output_batcher& batcher) {
  drain(output_stream::stdout_stream, batcher);
  drain(output_stream::stderr_stream, batcher);
}

void child_output::finish(output_batcher& batcher) {
  for (const output_stream stream : {output_stream::stdout_stream, output_stream::stderr_stream}) {
    if (const std::string tail = text_[index_of(stream)].finish(); !tail.empty()) {
      batcher.add(stream, tail);
    }
  }
}

}  // namespace sandgate::kernels
