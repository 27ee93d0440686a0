#include "sandgate_kernels/sigint_forwarder.hpp"

#include <pthread.h>
#include <csignal>
#include <utility>

namespace sandgate::kernels {

sigint_forwarder::sigint_forwarder(std::function<void()> on_sigint)
    : thread_([on_sigint = std::move(on_sigint)] {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGUSR2);
        for (;;) {
          int signal = 0;
          if (sigwait(&set, &signal) != 0 || signal == SIGUSR2) {
            return;
          }
          on_sigint();
        }
      }) {}

sigint_forwarder::~sigint_forwarder() {
  pthread_kill(thread_.native_handle(), SIGUSR2);
  thread_.join();
}

void block_stop_signal() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
}

}  // namespace sandgate::kernels
