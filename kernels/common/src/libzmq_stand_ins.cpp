// Stand-ins for the libzmq calls libxeus makes on the kernel's sockets.
//
// xeus 2.4.1 makes its sockets itself, out of the kernel's reach. Every call
// it makes on them goes through cppzmq's socket_t, inlined into libxeus,
// which calls libzmq through the dynamic linker: the executable's
// definitions below come first in symbol lookup, so they see every socket
// the process makes, then call libzmq's own.
//
// - zmq_socket: iopub never drops a message. A PUB socket drops every
//   message it cannot queue (libzmq's default high-water mark is 1000
//   messages), so a cell that prints faster than its reader takes messages
//   in (a loop of print(), on a busy machine) lost output silently: 200,000
//   numbered lines arrived as 134,165. With ZMQ_XPUB_NODROP a full queue
//   makes the send wait instead, so a fast cell runs at the pace of its
//   slowest live reader (the gateway reads without limit); memory stays
//   bounded and nothing is lost. A reader that goes away takes its queue
//   with it, so a gateway that is gone never holds a kernel up.
// - zmq_bind, zmq_connect, zmq_close: which sockets are xeus's iopub path
//   (sandgate_kernels/iopub_sockets.hpp), so that the first messages are
//   not lost and the journal sees the client-facing socket.
// - zmq_msg_send: the journal's tap, before the frame goes out; and a send
//   that a signal interrupted (EINTR: nothing was sent) is made again. A
//   SIGINT that interrupts a cell may land while the cell's output is being
//   sent, and xeus would take the EINTR for a broken socket.
// - zmq_poll, zmq_msg_recv: made again when a signal interrupts them, but
//   on a thread whose SIGINT window is open (a cell's, which an input()
//   waits in: its interrupt must end the wait). xeus takes an EINTR in its
//   loops for a failure and the process ends: a cell that set a SIGALRM
//   timer (signal.setitimer, signal.alarm) killed the kernel as soon as
//   it was idle, the signal landing in the shell loop's poll or in another
//   xeus thread's.

#include <dlfcn.h>
#include <zmq.h>
#include <cerrno>

#include <chrono>

#include "sandgate_kernels/iopub_sockets.hpp"
#include "sandgate_kernels/sigint_mask.hpp"

namespace {

template <typename Fn>
Fn libzmq(const char* name) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, name));
}

}  // namespace

namespace detail = sandgate::kernels::detail;

extern "C" __attribute__((visibility("default"))) void* zmq_socket(void* context, int type) {
  static const auto next = libzmq<void* (*)(void*, int)>("zmq_socket");
  void* const socket = next(context, type);
  if (socket && type == ZMQ_PUB) {
    const int on = 1;
    // Cannot fail on a PUB socket; should it, the socket keeps libzmq's default.
    (void)zmq_setsockopt(socket, ZMQ_XPUB_NODROP, &on, sizeof on);
  }
  return socket;
}

extern "C" __attribute__((visibility("default"))) int zmq_bind(void* socket, const char* endpoint) {
  static const auto next = libzmq<int (*)(void*, const char*)>("zmq_bind");
  const int rc = next(socket, endpoint);
  if (rc == 0) detail::note_bound(socket, endpoint);
  return rc;
}

extern "C" __attribute__((visibility("default"))) int zmq_connect(void* socket, const char* endpoint) {
  static const auto next = libzmq<int (*)(void*, const char*)>("zmq_connect");
  const int rc = next(socket, endpoint);
  if (rc == 0) detail::note_connected(socket, endpoint);
  return rc;
}

extern "C" __attribute__((visibility("default"))) int zmq_close(void* socket) {
  static const auto next = libzmq<int (*)(void*)>("zmq_close");
  detail::note_closed(socket);
  return next(socket);
}

extern "C" __attribute__((visibility("default"))) int zmq_msg_send(zmq_msg_t* msg, void* socket, int flags) {
  static const auto next = libzmq<int (*)(zmq_msg_t*, void*, int)>("zmq_msg_send");
  if (auto* const tap = detail::tap_of(socket); tap && msg) tap->on_frame(*msg, (flags & ZMQ_SNDMORE) != 0);
  for (;;) {
    const int rc = next(msg, socket, flags);
    if (rc >= 0 || errno != EINTR) return rc;
  }
}

extern "C" __attribute__((visibility("default"))) int zmq_msg_recv(zmq_msg_t* msg, void* socket, int flags) {
  static const auto next = libzmq<int (*)(zmq_msg_t*, void*, int)>("zmq_msg_recv");
  for (;;) {
    const int rc = next(msg, socket, flags);
    if (rc >= 0 || errno != EINTR || sandgate::kernels::in_sigint_window()) return rc;
  }
}

extern "C" __attribute__((visibility("default"))) int zmq_poll(zmq_pollitem_t* items, int count,
                                                               long timeout_ms) {
  static const auto next = libzmq<int (*)(zmq_pollitem_t*, int, long)>("zmq_poll");
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const int rc = next(items, count, timeout_ms);
    if (rc >= 0 || errno != EINTR || sandgate::kernels::in_sigint_window()) return rc;
    if (timeout_ms > 0) {  // what is left of the wait (-1: no end; 0: none)
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock::now()).count();
      if (left <= 0) return 0;
      timeout_ms = left;
    }
  }
}
