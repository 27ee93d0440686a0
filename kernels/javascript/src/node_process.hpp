// One persistent Node process running the kernel's driver script.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "frame_codec.hpp"
#include "sandgate_kernels/child_output.hpp"
#include "sandgate_kernels/child_process.hpp"
#include "sandgate_kernels/output_batcher.hpp"
#include "sandgate_kernels/pipe.hpp"

namespace sandgate::javascript_kernel {

namespace nl = nlohmann;

struct node_options {
  std::string node;      // the node executable (a name is looked up in PATH)
  std::string driver;    // share/sandgate/javascript/driver.js
  std::string language;  // "javascript" or "typescript"
};

// How a wait() ended.
enum class wait_end {
  frame,                   // the frame waited for arrived
  exited,                  // Node ended (its exit status: exit_status())
  killed_after_interrupt,  // Node did not stop on SIGINT within the grace time and was killed
};

// Node runs `node <driver> <language>` (a kernels::child_process: its own
// process group, stdin /dev/null), stdout and stderr pipes to us, commands on
// its fd 3 and events from its fd 4 (frame_codec.hpp). The driver sends
// output as stream events; what Node's children write to the inherited fds
// 1 and 2 is read too. Not thread-safe, except interrupt() and kill_group().
class node_process {
 public:
  // After SIGINT, how long Node has to end the cell before it is killed
  // (code that came back from an await runs outside vm's breakOnSigint).
  static constexpr std::chrono::milliseconds interrupt_grace{3000};

  using frame_handler = std::function<bool(nl::json& frame)>;  // true: the frame waited for

  // Spawns Node and waits for the driver's "ready" frame (ready()); throws
  // std::runtime_error naming what failed.
  explicit node_process(const node_options& options);
  ~node_process();  // SIGKILL to the group, then reap
  node_process(const node_process&) = delete;
  node_process& operator=(const node_process&) = delete;

  const nl::json& ready() const noexcept { return ready_; }

  // Sends one command; false if Node is gone.
  bool send(const nl::json& command);

  // Reads until on_frame accepts a frame, or Node ends. Output reaches
  // on_output in arrival order (batched: output_batcher), before any later
  // frame reaches on_frame.
  wait_end wait(const frame_handler& on_frame, const kernels::output_handler& on_output);

  // SIGINT to Node's group while a wait() runs; a no-op otherwise. Any thread.
  void interrupt() noexcept;
  // SIGKILL to Node's group: a wait() ends with `exited`. Any thread.
  void kill_group() noexcept;

  bool alive() const noexcept { return node_.alive(); }
  int exit_status() const noexcept { return node_.exit_status(); }  // after an end; 128+n for signal n

 private:
  kernels::child_process node_;
  kernels::unique_fd commands_;   // our end of Node's fd 3
  kernels::unique_fd events_;     // our end of Node's fd 4
  kernels::child_output output_;  // Node's stdout and stderr
  frame_decoder decoder_;
  nl::json ready_;
  std::atomic<bool> waiting_{false};
  std::atomic<std::int64_t> interrupted_at_ns_{0};  // steady clock; 0: no interrupt pending
};

}  // namespace sandgate::javascript_kernel
