// Takes SIGINT on a thread of its own and hands it to the kernel.
#pragma once

#include <functional>
#include <thread>

namespace sandgate::kernels {

// For a kernel whose cells run in a child process: SIGINT stays blocked in
// every thread (block_sigint() and block_stop_signal() in main, before any
// thread exists); this thread takes it with sigwait and calls on_sigint
// (which must be thread-safe, e.g. a kill of the child's process group).
// SIGUSR2, blocked too, tells it to stop; the destructor sends it and joins.
class sigint_forwarder {
 public:
  explicit sigint_forwarder(std::function<void()> on_sigint);
  ~sigint_forwarder();
  sigint_forwarder(const sigint_forwarder&) = delete;
  sigint_forwarder& operator=(const sigint_forwarder&) = delete;

 private:
  std::thread thread_;
};

// Blocks SIGUSR2, the forwarder's stop signal, in the calling thread; call in
// main before any thread exists.
void block_stop_signal();

}  // namespace sandgate::kernels
