#include "sandgate_kernels/iopub_sockets.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string_view>
#include <vector>

namespace sandgate::kernels {
namespace {

std::atomic<iopub_tap*> tap{nullptr};
std::atomic<void*> iopub_socket{nullptr};

// xeus's inproc pairs, noted until they are settled. Never destroyed: xeus
// ends the process with std::exit while its detached threads still run.
struct inproc_sockets {
  std::mutex mutex;
  bool settled = false;
  std::vector<void*> subscribers;  // SUB sockets bound inproc
  std::vector<void*> publishers;   // PUB sockets connected inproc
};
inproc_sockets& inproc = *new inproc_sockets;

int socket_type(void* socket) {
  int type = -1;
  std::size_t size = sizeof type;
  return zmq_getsockopt(socket, ZMQ_TYPE, &type, &size) == 0 ? type : -1;
}

bool is_inproc(const char* endpoint) {
  return endpoint && std::string_view(endpoint).starts_with("inproc://");
}

// Has the socket process the commands waiting for it (ZMQ_EVENTS does, at once).
void process_commands(void* socket) {
  int events = 0;
  std::size_t size = sizeof events;
  (void)zmq_getsockopt(socket, ZMQ_EVENTS, &events, &size);
}

}  // namespace

void set_iopub_tap(iopub_tap* new_tap) {
  tap.store(new_tap, std::memory_order_release);
}

std::size_t settle_iopub_subscriptions() {
  const std::lock_guard lock(inproc.mutex);
  inproc.settled = true;
  // A SUB socket takes its new peers, and sends them its subscriptions, when
  // it processes its commands; a PUB socket takes them in when it does.
  for (void* sub : inproc.subscribers)
    process_commands(sub);
  for (void* pub : inproc.publishers)
    process_commands(pub);
  const std::size_t count = inproc.publishers.size();
  inproc.subscribers.clear();
  inproc.publishers.clear();
  return count;
}

namespace detail {

void note_bound(void* socket, const char* endpoint) {
  const int type = socket_type(socket);
  if (type == ZMQ_PUB && endpoint && !is_inproc(endpoint)) {
    void* none = nullptr;  // the first one only
    iopub_socket.compare_exchange_strong(none, socket, std::memory_order_acq_rel);
  } else if (type == ZMQ_SUB && is_inproc(endpoint)) {
    const std::lock_guard lock(inproc.mutex);
    if (!inproc.settled) inproc.subscribers.push_back(socket);
  }
}

void note_connected(void* socket, const char* endpoint) {
  if (!is_inproc(endpoint) || socket_type(socket) != ZMQ_PUB) return;
  const std::lock_guard lock(inproc.mutex);
  if (!inproc.settled) inproc.publishers.push_back(socket);
}

void note_closed(void* socket) {
  void* expected = socket;
  iopub_socket.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
  const std::lock_guard lock(inproc.mutex);
  std::erase(inproc.subscribers, socket);
  std::erase(inproc.publishers, socket);
}

iopub_tap* tap_of(void* socket) {
  if (socket == nullptr || iopub_socket.load(std::memory_order_acquire) != socket) return nullptr;
  return tap.load(std::memory_order_acquire);
}

}  // namespace detail
}  // namespace sandgate::kernels
