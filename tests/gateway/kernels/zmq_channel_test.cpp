#include "kernels/zmq_channel.hpp"

#include <gtest/gtest.h>

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <string>
#include <thread>

namespace sandgate::gateway {
namespace {

std::atomic<long> signals_caught{0};

void count_signal(int) {
  signals_caught.fetch_add(1, std::memory_order_relaxed);
}

// As the gateway's SIGCHLD handler does: a handler without SA_RESTART, so a
// signal fails whatever system call it lands in with EINTR, libzmq's own
// polls included.
class interrupting_signals {
 public:
  explicit interrupting_signals(pthread_t target) : target_(target) {
    struct sigaction sa {};
    sa.sa_handler = count_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sigaction(SIGUSR1, &sa, &old_);
    thread_ = std::thread([this] {
      while (!stop_.load())
        pthread_kill(target_, SIGUSR1);
    });
  }
  ~interrupting_signals() {
    stop_.store(true);
    thread_.join();
    sigaction(SIGUSR1, &old_, nullptr);
  }
  interrupting_signals(const interrupting_signals&) = delete;
  interrupting_signals& operator=(const interrupting_signals&) = delete;

 private:
  pthread_t target_;
  struct sigaction old_ {};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(zmq_channel, every_message_arrives_whole_while_signals_interrupt_libzmq) {
  constexpr int messages = 20000;
  boost::asio::io_context io;
  zmq::context_t ctx(1);
  const std::string endpoint = "ipc:///tmp/sandgate-zmq-channel-test-" + std::to_string(::getpid());
  zmq::socket_t peer(ctx, zmq::socket_type::pair);
  peer.set(zmq::sockopt::linger, 0);
  peer.set(zmq::sockopt::sndtimeo, 30000);  // a channel gone deaf fails the test, not hangs it
  peer.bind(endpoint);
  int received = 0;
  int whole = 0;
  auto channel =
      zmq_channel::connect(io, ctx, zmq::socket_type::pair, endpoint, [&](zmq_channel::frames&& f) {
        ++received;
        if (f.size() == 3 && f[0] == "a" && f[2] == std::to_string(received)) ++whole;
        if (received == messages) io.stop();
      });
  std::thread sender([&] {
    for (int i = 1; i <= messages; ++i) {
      const std::string n = std::to_string(i);
      if (!peer.send(zmq::str_buffer("a"), zmq::send_flags::sndmore) ||
          !peer.send(zmq::str_buffer("b"), zmq::send_flags::sndmore) || !peer.send(zmq::buffer(n)))
        return;
    }
  });
  int sends_ok = 0;
  {
    const interrupting_signals signals(pthread_self());
    // Sends from the io thread too, under the same signals.
    for (int i = 0; i < 2000; ++i)
      sends_ok += channel->send({"x", std::to_string(i)}) ? 1 : 0;
    // Nothing escapes the loop: an exception here is a channel gone deaf.
    EXPECT_NO_THROW(io.run_for(std::chrono::seconds(60)));
  }
  sender.join();
  EXPECT_EQ(received, messages);
  EXPECT_EQ(whole, messages);
  EXPECT_EQ(sends_ok, 2000);
  EXPECT_GT(signals_caught.load(), 0);
  channel->close();
  ::unlink(endpoint.substr(6).c_str());
}

}  // namespace
}  // namespace sandgate::gateway
