#pragma once
// The request/response exchanges the benchmark times. An exchange is done
// when both its reply (shell) and its idle status (iopub) have arrived:
// they come in either order, and a client must wait for both.

#include "kernel_connection.hpp"

#include <chrono>
#include <string>

namespace sandgate::bench {

using bench_clock = std::chrono::steady_clock;

[[nodiscard]] inline double ms_between(bench_clock::time_point a, bench_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

struct execute_outcome {
  double done_ms = 0;            // request sent -> reply and idle both received
  double reply_ms = 0;           // request sent -> execute_reply
  double first_display_ms = -1;  // request sent -> first display_data (-1: none)
  double result_ms = -1;         // request sent -> first execute_result (-1: none)
  bench_clock::time_point sent_at;
  std::size_t stream_bytes = 0;   // content bytes of the stream messages
  std::size_t display_bytes = 0;  // content bytes of the display_data messages
  std::size_t iopub_messages = 0;
  double last_iopub_ms = 0;  // request sent -> last iopub message of this request
  bool idle_lost = false;    // the reply came but the idle status did not (iopub is lossy)
};

// Runs `code`; throws bench_error on a timeout or a reply whose status is not
// ok. With `idle_grace` > 0, an idle status still missing that long after the
// reply is given up on (idle_lost); a WebSocket connection is unusable after.
execute_outcome execute(kernel_connection& c, const std::string& code, std::chrono::milliseconds timeout,
                        std::chrono::milliseconds idle_grace = std::chrono::milliseconds(0));

// kernel_info_request -> kernel_info_reply. Returns the time taken in ms.
double kernel_info(kernel_connection& c, std::chrono::milliseconds timeout);

// Repeats kernel_info until an iopub status answering one of them arrives,
// proving the iopub subscription is live (a SUB socket drops what comes
// before it is connected). A ZeroMQ client re-asks every `round`; a
// WebSocket client must pass round == timeout (a timed-out read breaks it).
void sync_iopub(kernel_connection& c, std::chrono::milliseconds timeout, std::chrono::milliseconds round);

}  // namespace sandgate::bench
