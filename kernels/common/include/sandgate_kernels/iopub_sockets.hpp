// The kernel's iopub sockets, seen from inside the kernel.
//
// xeus 2.4.1 keeps its sockets to itself: each thread that publishes (shell,
// control) has a PUB socket connected to an inproc SUB socket of the
// publisher thread, which forwards every message to the PUB socket bound
// for the clients. The kernel executables stand in for zmq_bind,
// zmq_connect, zmq_close and zmq_msg_send (common/src/libzmq_stand_ins.cpp)
// and report here, which gives the kernel two things xeus lacks:
//
// - Nothing published at start is lost. An inproc PUB socket drops what it
//   sends before the publisher thread's subscription has reached it, and
//   that thread only runs once the kernel starts: on a loaded machine a
//   kernel's starting status, its first kernel_info statuses, even a first
//   cell's output went nowhere (4 kernels of 12 started together lost some).
//   settle_iopub_subscriptions() delivers the subscription before any
//   thread starts.
// - A tap (the iopub journal) sees every frame the client-facing socket
//   sends, on the thread that publishes, before libzmq has it: nothing a
//   late subscriber could miss.
#pragma once

#include <cstddef>

#include <zmq.h>

namespace sandgate::kernels {

class iopub_tap {
 public:
  // One frame about to be sent; `more` when frames of the same message follow.
  virtual void on_frame(zmq_msg_t& frame, bool more) = 0;  // reads the frame, never changes it

 protected:
  ~iopub_tap() = default;
};

// Taps the kernel's iopub socket (the first PUB socket bound to an address
// outside the process; a cell's own sockets come later), or stops tapping
// with nullptr. Before the kernel binds.
void set_iopub_tap(iopub_tap* tap);

// Once the kernel's sockets exist and before any of its threads runs: lets
// the inproc SUB sockets bound so far take their PUB peers, and those PUB
// sockets take the subscriptions, so that their first message is
// delivered. Returns how many PUB sockets it settled; sockets made after it
// are left alone.
std::size_t settle_iopub_subscriptions();

namespace detail {
// For the stand-ins only, each after libzmq's call succeeded.
void note_bound(void* socket, const char* endpoint);
void note_connected(void* socket, const char* endpoint);
// Before libzmq's call: the address may come back for another socket.
void note_closed(void* socket);
// The tap of `socket`, or null: every zmq_msg_send asks, so it costs a load and a compare.
iopub_tap* tap_of(void* socket);
}  // namespace detail

}  // namespace sandgate::kernels
