#include "sandgate_kernels/sigint_mask.hpp"

#include <pthread.h>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <string>

namespace sandgate::kernels {
namespace {

sigset_t sigint_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  return set;
}

void change_mask(int how) {
  const sigset_t set = sigint_set();
  if (const int rc = pthread_sigmask(how, &set, nullptr); rc != 0) {
    throw std::runtime_error(std::string("pthread_sigmask(SIGINT): ") + std::strerror(rc));
  }
}

thread_local bool window_open = false;

}  // namespace

bool in_sigint_window() {
  return window_open;
}

void block_sigint() {
  change_mask(SIG_BLOCK);
}

void drop_pending_sigint() {
  const sigset_t set = sigint_set();
  const timespec zero{0, 0};
  // Each call consumes one pending instance (thread-directed first).
  while (sigtimedwait(&set, nullptr, &zero) == SIGINT) {
  }
}

sigint_window::sigint_window() {
  drop_pending_sigint();
  change_mask(SIG_UNBLOCK);
  window_open = true;
}

sigint_window::~sigint_window() {
  window_open = false;
  const sigset_t set = sigint_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  drop_pending_sigint();
}

}  // namespace sandgate::kernels
