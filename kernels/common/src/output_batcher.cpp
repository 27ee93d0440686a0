#include "sandgate_kernels/output_batcher.hpp"

#include <algorithm>

namespace sandgate::kernels {

void output_batcher::add(output_stream stream, std::string_view bytes) {
  if (!pending_.empty() && stream != stream_) {
    flush();  // keep stdout/stderr interleaving in arrival order
  }
  if (pending_.empty()) {
    stream_ = stream;
    deadline_ = std::chrono::steady_clock::now() + flush_interval;
  }
  pending_.append(bytes);
  if (pending_.size() >= max_chunk_bytes) {
    flush();
  }
}

void output_batcher::flush_due() {
  if (!pending_.empty() && std::chrono::steady_clock::now() >= deadline_) {
    flush();
  }
}

void output_batcher::flush_all() {
  flush();
}

int output_batcher::poll_timeout_ms() const {
  if (pending_.empty()) {
    return -1;
  }
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<std::chrono::milliseconds::rep>(left.count(), 0));
}

void output_batcher::flush() {
  if (pending_.empty()) {
    return;
  }
  std::string chunk;
  chunk.swap(pending_);
  handler_(stream_, chunk);
}

}  // namespace sandgate::kernels
