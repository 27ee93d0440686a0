#pragma once
// A kernel's process in its sandbox: launched from its kernelspec, or taken
// back from an earlier gateway; signalled; stopped by a ladder of steps;
// its exit reported. Each launch is a generation of its own, and the exit
// of an earlier generation is ignored. Its files in the sandbox's run dir
// (connection file, ipc sockets, iopub journal) share one short name.

#include "../sandboxes/sandbox.hpp"
#include "kernel_options.hpp"

#include <jupyter_protocol/connection_file.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sandgate::gateway {

class kernel_process : public std::enable_shared_from_this<kernel_process> {
 public:
  using done_handler = std::function<void(std::string error)>;  // empty: success
  using exit_handler = std::function<void(const exit_status&)>;

  // `file_name`: the process's name in the sandbox and its files' in the run
  // dir. Owned by a shared_ptr: the sandbox's and the timers' callbacks hold
  // it weakly.
  kernel_process(boost::asio::io_context& io, std::string kernel_id, std::shared_ptr<sandbox> box,
                 std::string file_name, const kernel_limits& limits);

  // Writes the connection file (0600, handed to the sandbox user), clears
  // what an earlier generation left, and spawns the kernel as `opts` say.
  // `spawned` once it runs (or why it does not); `exited` when it ends
  // unasked (not when stop() ended it).
  void launch(const kernel_options& opts, const protocol::connection_info& conn, done_handler spawned,
              exit_handler exited);
  // Takes back the process an earlier gateway launched: `found` once the
  // sandbox answers whether it still runs.
  void reclaim(done_handler found, exit_handler exited);
  // Calls `late` unless cancel_ready_deadline() comes first within `limit`.
  void expect_ready_within(std::chrono::seconds limit, std::function<void()> late);
  void cancel_ready_deadline() { start_timer_.cancel(); }

  // Sends `sig` to the kernel's process group.
  void signal(int sig);
  // Ends the process: `ask` (the kernel's shutdown_request), then SIGTERM,
  // then SIGKILL, each a grace apart; `after_exit` once it exited, or a
  // grace after SIGKILL without word of its exit. At once if it is not running.
  void stop(std::function<void()> ask, std::function<void()> after_exit);
  // The process went with its sandbox: nothing more is waited for.
  void forget();
  // What the kernel leaves behind in a sandbox that goes on: every process
  // it started, and its files in the run dir.
  void remove_traces();

  [[nodiscard]] bool running() const noexcept { return running_; }
  [[nodiscard]] sandbox& box() const noexcept { return *box_; }
  [[nodiscard]] const std::shared_ptr<sandbox>& shared_box() const noexcept { return box_; }
  [[nodiscard]] const std::string& file_name() const noexcept { return file_name_; }
  // The kernel's sockets in the run dir, in the order shell, control, stdin, iopub.
  [[nodiscard]] std::vector<std::string> socket_names() const;
  // The run dir path (as the gateway sees it) that its files' names extend.
  [[nodiscard]] std::filesystem::path files_base() const { return box_->run_dir_host() / file_name_; }

 private:
  void on_exit(unsigned generation, const exit_status& st);
  void next_stop_step();
  [[nodiscard]] spawn_request spawn_request_for(const kernel_options& opts) const;

  std::string kernel_id_;  // for the log
  std::shared_ptr<sandbox> box_;
  std::string file_name_;
  std::chrono::seconds shutdown_grace_;
  unsigned generation_ = 0;
  bool running_ = false;
  exit_handler exited_;
  // The stop ladder: the steps not yet taken, the next first.
  std::vector<std::function<void()>> stop_steps_;
  std::function<void()> stopped_;
  boost::asio::steady_timer start_timer_;
  boost::asio::steady_timer stop_timer_;
};

}  // namespace sandgate::gateway
