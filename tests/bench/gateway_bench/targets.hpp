#pragma once
// What the benchmark talks to: a gateway speaking the Kernel Gateway REST
// API and channels WebSocket (Sandgate, Jupyter Notebook), or kernels
// started by the benchmark itself and spoken to over ZeroMQ (the floor).

#include "kernel_connection.hpp"

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace sandgate::bench {

// A started kernel; ending the value shuts the kernel down.
class kernel_session {
 public:
  virtual ~kernel_session() = default;
  [[nodiscard]] virtual kernel_connection& connection() = 0;
  double start_ms = 0;      // start request -> first kernel_info_reply received
  double created_ms = 0;    // start request -> answered (POST reply; the floor: kernel spawned)
  double connected_ms = 0;  // start request -> connection open (WebSocket handshake done)
};

class target {
 public:
  virtual ~target() = default;
  // Starts a kernel and returns once its first kernel_info_reply arrived
  // and its iopub stream is live. Safe to call from several threads.
  [[nodiscard]] virtual std::unique_ptr<kernel_session> start_kernel() = 0;
  // What a client does before its first execute, and no more: POST
  // /api/kernels and open a fresh channels WebSocket. The floor has no
  // server to tell it the kernel is up, so it does what start_kernel does
  // (without its iopub proven live, output could be lost).
  [[nodiscard]] virtual std::unique_ptr<kernel_session> create_kernel() = 0;
  // A gauge or counter of the server's warm pool for the target's
  // kernelspec, from /metrics (e.g. sandgate_pool_ready); nullopt when the
  // server shows none.
  [[nodiscard]] virtual std::optional<double> pool_metric(const std::string& name) = 0;
  // The server process to measure (memory, CPU); 0 when there is none.
  [[nodiscard]] virtual pid_t server_pid() const = 0;
};

struct rest_options {
  std::string host = "127.0.0.1";
  std::string port;
  std::string token;
  std::string base_url = "/";
  std::string kernel_name = "python";
  bool v1 = true;  // v1.kernel.websocket.jupyter.org, else legacy JSON
  pid_t server_pid = 0;
  std::chrono::seconds start_timeout{300};  // POST to kernel_info_reply, kernels starting at once included
};

struct zmq_options {
  std::filesystem::path kernelspec_dir;  // holds kernel.json
  std::chrono::seconds start_timeout{300};
};

[[nodiscard]] std::unique_ptr<target> make_rest_target(const rest_options& opts);
[[nodiscard]] std::unique_ptr<target> make_zmq_target(const zmq_options& opts);

}  // namespace sandgate::bench
