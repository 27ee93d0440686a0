// The child process that runs a kernel's cells, started again once it ended.
#pragma once

#include <memory>
#include <mutex>
#include <utility>

namespace sandgate::kernels {

// Holds a kernel's bash or Node: `Process` has alive(), interrupt() and
// kill_group(), the last two safe from any thread. A cell ran `exit` or the
// process died: the next cell gets a new one, while an interrupt or a
// shutdown_request from the control thread always reaches the current one.
template <class Process>
class child_slot {
 public:
  child_slot() = default;
  ~child_slot() { reset(); }
  child_slot(const child_slot&) = delete;
  child_slot& operator=(const child_slot&) = delete;

  // The running process, or a new Process(args...) if it ended or there is
  // none yet. On the thread that runs cells; throws what Process throws.
  template <class... Args>
  Process& running(Args&&... args) {
    const std::scoped_lock lock(mutex_);
    if (!process_ || !process_->alive()) {
      process_.reset();
      process_ = std::make_unique<Process>(std::forward<Args>(args)...);
    }
    return *process_;
  }

  // Interrupts what the process runs (its interrupt()); no-op without one. Any thread.
  void interrupt() noexcept {
    const std::scoped_lock lock(mutex_);
    if (process_) {
      process_->interrupt();
    }
  }

  // Kills the process's group, so that a running cell returns; the process
  // object itself stays for the thread that runs cells. Any thread.
  void kill() noexcept {
    const std::scoped_lock lock(mutex_);
    if (process_) {
      process_->kill_group();
    }
  }

  // Ends the process (its destructor). On the thread that runs cells.
  void reset() {
    const std::scoped_lock lock(mutex_);
    process_.reset();
  }

 private:
  std::mutex mutex_;  // guards process_'s replacement against interrupt() and kill()
  std::unique_ptr<Process> process_;
};

}  // namespace sandgate::kernels
