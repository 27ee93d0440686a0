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
      sends_ok += channel->send({"x", std::to_string(i)}) != send_result::refused ? 1 : 0;
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

// A peer that reads slower than the channel sends: what ZeroMQ's pipe
// cannot take waits in the channel's queue and goes out in order once the
// peer reads; past the queue's own bound a send is refused, not lost unsaid.
TEST(zmq_channel, sends_past_a_full_pipe_wait_in_order_and_are_refused_past_the_queue) {
  constexpr int messages = 5000;
  boost::asio::io_context io;
  zmq::context_t ctx(1);
  const std::string endpoint = "ipc:///tmp/sandgate-zmq-queue-test-" + std::to_string(::getpid());
  zmq::socket_t peer(ctx, zmq::socket_type::router);
  peer.set(zmq::sockopt::linger, 0);
  peer.set(zmq::sockopt::rcvhwm, 10);
  peer.bind(endpoint);
  auto channel =
      zmq_channel::connect(io, ctx, zmq::socket_type::dealer, endpoint, [](zmq_channel::frames&&) {});
  channel->set_queue_limits({.messages = 100000, .bytes = 64 * 1024 * 1024});
  int drained = 0;
  channel->on_drained([&] { ++drained; });
  int queued = 0;
  for (int i = 0; i < messages; ++i) {
    const auto result = channel->send({std::to_string(i)});
    ASSERT_NE(result, send_result::refused) << i;
    queued += result == send_result::queued ? 1 : 0;
  }
  EXPECT_GT(queued, 0) << "ZeroMQ took every message: the pipe never filled";
  EXPECT_TRUE(channel->congested());

  // The peer reads everything, in order, while the io_context sends the rest.
  int next = 0;
  std::string disorder;
  std::thread reader([&] {
    peer.set(zmq::sockopt::rcvtimeo, 30000);
    while (next < messages) {
      zmq::message_t identity, body;
      if (!peer.recv(identity) || !peer.recv(body)) return;
      if (body.to_string() != std::to_string(next) && disorder.empty())
        disorder = "got " + body.to_string() + " for " + std::to_string(next);
      ++next;
    }
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (next < messages && std::chrono::steady_clock::now() < deadline)
    io.run_for(std::chrono::milliseconds(10));
  reader.join();
  EXPECT_EQ(next, messages);
  EXPECT_EQ(disorder, "");
  io.run_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(channel->congested());
  EXPECT_GE(drained, 1);

  // A queue of one message: the next send past a full pipe is refused.
  channel->set_queue_limits({.messages = 1, .bytes = 1024});
  int refused_at = -1;
  for (int i = 0; i < 100000 && refused_at < 0; ++i)
    if (channel->send({"more"}) == send_result::refused) refused_at = i;
  EXPECT_GE(refused_at, 1);
  EXPECT_TRUE(channel->congested());
  channel->close();
  ::unlink(endpoint.substr(6).c_str());
}

}  // namespace
}  // namespace sandgate::gateway
