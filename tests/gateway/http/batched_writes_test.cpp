// batched_writes under a real Beast WebSocket on loopback, read by a Beast
// client in a thread of its own: batched frames arrive whole and in order
// from one write, a write made during a flush waits for it, and a close
// sends what is batched before the connection goes.

#include "http/batched_writes.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using server_socket = websocket::stream<sandgate::gateway::batched_writes<beast::tcp_stream>>;

class batched_writes_test : public ::testing::Test {
 protected:
  void SetUp() override {
    net::ip::tcp::acceptor acceptor(io_, {net::ip::make_address("127.0.0.1"), 0});
    const auto port = acceptor.local_endpoint().port();
    client_ = std::thread([this, port, go = go_.get_future()]() mutable { read_all(port, std::move(go)); });
    server_ = std::make_unique<server_socket>(beast::tcp_stream(acceptor.accept()));
    bool accepted = false;
    server_->async_accept([&](beast::error_code ec) {
      EXPECT_FALSE(ec) << ec.message();
      accepted = true;
    });
    run_until([&] { return accepted; });
  }

  void TearDown() override {
    if (!reading_started_) go_.set_value();
    server_.reset();
    if (client_.joinable()) client_.join();
  }

  // The client: every message until the connection ends, once told to read.
  void read_all(unsigned short port, std::future<void> go) {
    net::io_context io;
    websocket::stream<beast::tcp_stream> ws(io);
    ws.next_layer().connect({net::ip::make_address("127.0.0.1"), port});
    ws.handshake("127.0.0.1", "/");
    go.wait();
    for (;;) {
      beast::flat_buffer buffer;
      beast::error_code ec;
      ws.read(buffer, ec);
      const std::lock_guard lock(mutex_);
      if (ec) {
        close_code_ = ec == websocket::error::closed ? static_cast<int>(ws.reason().code) : -1;
        return;
      }
      received_.push_back(beast::buffers_to_string(buffer.data()));
    }
  }

  void start_reading() {
    reading_started_ = true;
    go_.set_value();
  }

  // Client results, once its thread is done.
  std::vector<std::string> received() {
    client_.join();
    return received_;
  }

  void run_until(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done()) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "timed out";
      if (io_.stopped()) io_.restart();
      io_.run_one_for(std::chrono::milliseconds(50));
    }
  }

  // Writes one message and waits for its completion.
  void write(const std::string& text) {
    bool done = false;
    server_->async_write(net::buffer(text), [&](beast::error_code ec, std::size_t) {
      EXPECT_FALSE(ec) << ec.message();
      done = true;
    });
    run_until([&] { return done; });
  }

  void flush() {
    bool done = false;
    server_->next_layer().async_flush([&](beast::error_code ec) {
      EXPECT_FALSE(ec) << ec.message();
      done = true;
    });
    run_until([&] { return done; });
  }

  void close() {
    bool done = false;
    server_->async_close(websocket::close_code::normal, [&](beast::error_code) { done = true; });
    run_until([&] { return done; });
  }

  net::io_context io_;
  std::unique_ptr<server_socket> server_;
  std::promise<void> go_;
  bool reading_started_ = false;
  std::thread client_;
  std::mutex mutex_;
  std::vector<std::string> received_;
  int close_code_ = 0;
};

TEST_F(batched_writes_test, batched_frames_go_out_whole_and_in_order_in_one_write) {
  start_reading();
  auto& wire = server_->next_layer();
  const auto writes_before = wire.writes();
  wire.batch(true);
  write("one");
  write("two");
  write(std::string(5000, 'x'));
  EXPECT_EQ(wire.writes(), writes_before);  // nothing sent yet
  EXPECT_GT(wire.batched_bytes(), 5000U);
  wire.batch(false);
  flush();
  EXPECT_EQ(wire.writes(), writes_before + 1);
  EXPECT_EQ(wire.batched_bytes(), 0U);
  write("after");  // not batched: written at once
  EXPECT_EQ(wire.writes(), writes_before + 2);
  close();
  EXPECT_EQ(received(), (std::vector<std::string>{"one", "two", std::string(5000, 'x'), "after"}));
  EXPECT_EQ(close_code_, 1000);
}

TEST_F(batched_writes_test, a_write_made_during_a_flush_goes_out_after_it) {
  // More than loopback buffers hold while the client does not read, so the
  // flush is still going out when the next write is made.
  constexpr int frames = 64;
  const std::string big(256 * 1024, 'b');
  auto& wire = server_->next_layer();
  wire.batch(true);
  for (int i = 0; i < frames; ++i)
    write(big + std::to_string(i));
  wire.batch(false);
  std::vector<std::string> completions;
  wire.async_flush([&](beast::error_code ec) {
    EXPECT_FALSE(ec) << ec.message();
    completions.emplace_back("flush");
  });
  const std::string after = "after";
  server_->async_write(net::buffer(after), [&](beast::error_code ec, std::size_t) {
    EXPECT_FALSE(ec) << ec.message();
    completions.emplace_back("after");
  });
  io_.poll();
  EXPECT_TRUE(completions.empty()) << "the flush went out before the client read anything";
  start_reading();
  run_until([&] { return completions.size() == 2; });
  EXPECT_EQ(completions, (std::vector<std::string>{"flush", "after"}));
  close();
  const auto got = received();
  ASSERT_EQ(got.size(), static_cast<std::size_t>(frames) + 1);
  for (int i = 0; i < frames; ++i)
    EXPECT_EQ(got[static_cast<std::size_t>(i)], big + std::to_string(i)) << "frame " << i;
  EXPECT_EQ(got.back(), after);
  EXPECT_EQ(close_code_, 1000);
}

TEST_F(batched_writes_test, a_close_sends_what_is_batched_before_the_connection_goes) {
  start_reading();
  auto& wire = server_->next_layer();
  wire.batch(true);
  write("x");
  write("y");
  wire.batch(false);
  close();  // no flush: the close's teardown writes the batch first
  EXPECT_EQ(received(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(close_code_, 1000);
}

TEST_F(batched_writes_test, a_teardown_sends_what_is_batched_first) {
  // As when Beast answers a client's close while a batch is open.
  start_reading();
  auto& wire = server_->next_layer();
  wire.batch(true);
  write("x");
  bool done = false;
  async_teardown(beast::role_type::server, wire, [&](beast::error_code) { done = true; });
  run_until([&] { return done; });
  EXPECT_EQ(received(), (std::vector<std::string>{"x"}));
  EXPECT_EQ(close_code_, -1);  // the connection ended without a close frame
}

TEST_F(batched_writes_test, a_discarded_batch_is_not_sent) {
  start_reading();
  auto& wire = server_->next_layer();
  wire.batch(true);
  write("dropped");
  wire.batch(false);
  wire.discard_batch();
  write("kept");
  close();
  EXPECT_EQ(received(), (std::vector<std::string>{"kept"}));
}

}  // namespace
