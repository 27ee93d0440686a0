// Output is never dropped on its way out of a kernel.
//
// xeus 2.4.1 makes its iopub sockets itself, out of the kernel's reach: a
// PUB socket bound for the clients, fed through an inproc PUB socket from
// whichever thread publishes. A PUB socket drops every message it cannot
// queue (libzmq's default high-water mark is 1000 messages), so a cell that
// prints faster than its reader takes messages in (a loop of print(), on a
// busy machine) lost output silently: 200,000 numbered lines arrived as
// 134,165. With ZMQ_XPUB_NODROP a full queue makes the send wait instead, so
// a fast cell runs at the pace of its slowest live reader (the gateway
// reads without limit, the iopub journal too); memory stays bounded and
// nothing is lost. A reader that goes away takes its queue with it, so a
// gateway that is gone never holds a kernel up.
//
// Both PUB sockets come from cppzmq's socket_t, inlined into libxeus, which
// calls zmq_socket through the dynamic linker: the executable's definition
// below comes first in symbol lookup, so it sees every socket the process
// makes.

#include <dlfcn.h>
#include <zmq.h>

extern "C" __attribute__((visibility("default"))) void* zmq_socket(void* context, int type) {
  using socket_fn = void* (*)(void*, int);
  static const auto next = reinterpret_cast<socket_fn>(::dlsym(RTLD_NEXT, "zmq_socket"));
  void* const socket = next(context, type);
  if (socket && type == ZMQ_PUB) {
    const int on = 1;
    // Cannot fail on a PUB socket; should it, the socket keeps libzmq's default.
    (void)zmq_setsockopt(socket, ZMQ_XPUB_NODROP, &on, sizeof on);
  }
  return socket;
}
