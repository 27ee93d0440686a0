// SIGINT discipline for xeus kernels.
//
// xeus 2.4.1's ZeroMQ loops throw (and the process dies) when a signal
// interrupts zmq_poll. So main blocks SIGINT before any thread exists; every
// xeus thread inherits the mask, and a kernel opens a window for SIGINT only
// where it wants one (the Python kernel: on the main thread while a cell runs).
// Other signals a cell handles (a SIGALRM timer, say) are not blocked: the
// kernels' stand-ins for libzmq make an interrupted call again outside a
// window.
#pragma once

namespace sandgate::kernels {

// Blocks SIGINT in the calling thread; call first thing in main.
void block_sigint();

// Discards SIGINTs pending for this thread or the process (never blocks).
void drop_pending_sigint();

// True on a thread while a sigint_window of its own is open: there, a
// blocking call that a signal interrupts is meant to end (so that the cell's
// KeyboardInterrupt comes), while everywhere else it is made again
// (common/src/libzmq_stand_ins.cpp).
bool in_sigint_window();

// Unblocks SIGINT on the calling thread for its lifetime, blocks it again and
// drops whatever arrived too late when it ends.
class sigint_window {
 public:
  sigint_window();
  ~sigint_window();
  sigint_window(const sigint_window&) = delete;
  sigint_window& operator=(const sigint_window&) = delete;
};

}  // namespace sandgate::kernels
