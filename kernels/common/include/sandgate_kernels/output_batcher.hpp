// Groups a kernel's child's output into stream messages of reasonable size.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

namespace sandgate::kernels {

enum class output_stream { stdout_stream, stderr_stream };

// Receives output: which stream, and bytes (not necessarily whole UTF-8).
using output_handler = std::function<void(output_stream, std::string_view bytes)>;

// Output reaches the handler at most flush_interval after it was read, or as
// soon as max_chunk_bytes have accumulated, in the order it arrived across
// stdout and stderr. Keeps tiny writes (one line per echo) from becoming one
// message each, without holding back a slow command's output.
class output_batcher {
 public:
  static constexpr std::size_t max_chunk_bytes = 64 * 1024;
  static constexpr std::chrono::milliseconds flush_interval{20};

  explicit output_batcher(const output_handler& handler) : handler_(handler) {}

  void add(output_stream stream, std::string_view bytes);
  void flush_due();             // flushes if the oldest pending byte is due
  void flush_all();             // flushes everything pending
  int poll_timeout_ms() const;  // -1 when nothing is pending

 private:
  void flush();

  const output_handler& handler_;
  output_stream stream_ = output_stream::stdout_stream;  // stream of pending_
  std::string pending_;
  std::chrono::steady_clock::time_point deadline_;
};

}  // namespace sandgate::kernels
