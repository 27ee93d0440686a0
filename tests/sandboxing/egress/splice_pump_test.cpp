#include "splice_pump.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace eg = sandgate::egress;
namespace sb = sandgate::sandboxing;

namespace {

// A connected pair of non-blocking unix stream sockets.
struct socket_pair {
  socket_pair() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0)
      throw std::runtime_error("socketpair");
    a.reset(fds[0]);
    b.reset(fds[1]);
    const int room = 2 * 1024 * 1024;  // for what a test writes at once (net.core.wmem_max permitting)
    ::setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &room, sizeof room);
  }
  sb::unique_fd a, b;
};

std::string read_all(int fd) {
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<std::size_t>(n));
  return out;
}

}  // namespace

TEST(splice_pump, moves_everything_then_waits_for_more) {
  socket_pair in, out;
  eg::splice_pump pump(64 * 1024);
  const std::string data(300 * 1024, 'x');
  ASSERT_EQ(::write(in.a.get(), data.data(), 100 * 1024), 100 * 1024);
  const auto r = pump.pump(in.b.get(), out.a.get(), SIZE_MAX);
  EXPECT_EQ(r.next, eg::splice_pump::wait::readable);
  EXPECT_EQ(r.moved, 100u * 1024);
  EXPECT_EQ(read_all(out.b.get()).size(), 100u * 1024);
}

TEST(splice_pump, a_pipe_full_of_small_pieces_is_not_an_empty_source) {
  // A pipe of one page holds few pieces: each small write is a piece of its
  // own, so reads into it stop (EAGAIN) long before the source is empty. An
  // edge-triggered caller told "readable" then would wait for an edge that
  // never comes.
  socket_pair in, out;
  eg::splice_pump pump(4096);
  const int small = 4096;  // `to` fills after a few pieces: the next call starts with a non-empty pipe
  ::setsockopt(out.a.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  std::string sent;
  for (int i = 0; i < 300; ++i) {
    const std::string piece = "piece " + std::to_string(i) + ";";
    ASSERT_EQ(::write(in.a.get(), piece.data(), piece.size()), static_cast<ssize_t>(piece.size()));
    sent += piece;
  }
  std::string received;
  eg::splice_pump::result r;
  do {
    r = pump.pump(in.b.get(), out.a.get(), SIZE_MAX);
    received += read_all(out.b.get());  // room for the next call when `to` filled up
  } while (r.next == eg::splice_pump::wait::writable);
  EXPECT_EQ(r.next, eg::splice_pump::wait::readable);
  EXPECT_EQ(received, sent);
}

TEST(splice_pump, waits_for_room_when_the_destination_is_full) {
  socket_pair in, out;
  eg::splice_pump pump(1024 * 1024);
  const int small = 16 * 1024;
  ::setsockopt(out.a.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  const std::string data(512 * 1024, 'y');
  ASSERT_EQ(::write(in.a.get(), data.data(), data.size()), static_cast<ssize_t>(data.size()));
  auto r = pump.pump(in.b.get(), out.a.get(), SIZE_MAX);
  EXPECT_EQ(r.next, eg::splice_pump::wait::writable);
  std::size_t total = r.moved, received = read_all(out.b.get()).size();
  while (r.next == eg::splice_pump::wait::writable) {
    r = pump.pump(in.b.get(), out.a.get(), SIZE_MAX);
    total += r.moved;
    received += read_all(out.b.get()).size();
  }
  EXPECT_EQ(r.next, eg::splice_pump::wait::readable);
  EXPECT_EQ(total, data.size());
  EXPECT_EQ(received, data.size());
}

TEST(splice_pump, the_end_of_the_source_ends_the_way_after_what_it_sent) {
  socket_pair in, out;
  eg::splice_pump pump(64 * 1024);
  ASSERT_EQ(::write(in.a.get(), "last words", 10), 10);
  ::shutdown(in.a.get(), SHUT_WR);
  const auto r = pump.pump(in.b.get(), out.a.get(), SIZE_MAX);
  EXPECT_EQ(r.next, eg::splice_pump::wait::ended);
  EXPECT_EQ(read_all(out.b.get()), "last words");
}

TEST(splice_pump, a_destination_that_is_gone_breaks_the_way) {
  socket_pair in, out;
  eg::splice_pump pump(64 * 1024);
  out.b.reset();
  ::signal(SIGPIPE, SIG_IGN);  // as in the proxy and the supervisor: EPIPE instead
  ASSERT_EQ(::write(in.a.get(), "nobody reads", 12), 12);
  EXPECT_EQ(pump.pump(in.b.get(), out.a.get(), SIZE_MAX).next, eg::splice_pump::wait::broken);
}

TEST(splice_pump, a_budget_hands_the_turn_back) {
  socket_pair in, out;
  eg::splice_pump pump(4096);
  const std::string data(64 * 1024, 'z');
  ASSERT_EQ(::write(in.a.get(), data.data(), data.size()), static_cast<ssize_t>(data.size()));
  const auto r = pump.pump(in.b.get(), out.a.get(), 8192);
  EXPECT_EQ(r.next, eg::splice_pump::wait::none);
  EXPECT_EQ(r.moved, 8192u);  // no more read than the budget: a rate limit holds
  EXPECT_EQ(read_all(out.b.get()).size(), 8192u);
}
