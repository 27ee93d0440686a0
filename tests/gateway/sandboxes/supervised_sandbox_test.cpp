// A sandbox's control socket answered by a stand-in for the supervisor on a
// real unix socket: a frame of another shape than the protocol's ends the
// sandbox with a reason, rather than throwing out of the read loop and
// leaving the socket unread; a request waits for the ready event and gets
// its reply.

#include "sandboxes/supervised_sandbox.hpp"

#include <sandboxing/control_protocol.hpp>

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/write.hpp>

#include <unistd.h>
#include <array>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace {
namespace sg = sandgate::gateway;
namespace net = boost::asio;
using unix_socket = net::local::stream_protocol;

class temp_dir {
 public:
  temp_dir() {
    std::string path = (std::filesystem::temp_directory_path() / "sandgate-supervised-XXXXXX").string();
    path_ = ::mkdtemp(path.data());
  }
  ~temp_dir() { std::filesystem::remove_all(path_); }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A supervised sandbox attached to a control socket whose other end (the
// stand-in supervisor, `peer`) the test holds once accept() returns.
struct attached_sandbox {
  attached_sandbox() : acceptor(io, unix_socket::endpoint((dir.path() / "control.sock").string())) {
    opts.id = "sandbox-under-test";
    opts.control_path = dir.path() / "control.sock";
    opts.run_dir = dir.path() / "run";
    box = std::make_shared<sg::supervised_sandbox>(io, opts);
  }
  // After attach(): the stand-in's end of the connection.
  void accept() { acceptor.accept(peer); }

  temp_dir dir;
  net::io_context io;
  unix_socket::acceptor acceptor;
  sg::supervisor_options opts;
  std::shared_ptr<sg::supervised_sandbox> box;
  unix_socket::socket peer{io};
};

// What the gateway makes of `frame`, sent first on the control socket of an
// attached sandbox: the reason the sandbox ended, if it did within 5 s.
std::optional<std::string> end_after(const nlohmann::json& frame) {
  attached_sandbox s;
  std::optional<std::string> ended;
  s.box->on_end([&](const std::string& why) { ended = why; });
  s.box->attach(0);
  s.accept();
  net::write(s.peer, net::buffer(sandgate::sandboxing::control::encode_frame(frame)));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!ended && std::chrono::steady_clock::now() < deadline)
    s.io.run_for(std::chrono::milliseconds(20));
  s.box->leave_running();
  return ended;
}

TEST(supervised_sandbox, a_ready_frame_of_the_wrong_shape_ends_the_sandbox_with_a_reason) {
  const auto why = end_after({{"event", "ready"}, {"id", 5}, {"pid", "one"}});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("bad frame from the sandbox supervisor"), std::string::npos) << *why;
}

TEST(supervised_sandbox, an_output_frame_of_the_wrong_shape_ends_the_sandbox_with_a_reason) {
  const auto why = end_after({{"event", "output"}, {"id", nlohmann::json::array()}, {"data", 7}});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("bad frame from the sandbox supervisor"), std::string::npos) << *why;
}

TEST(supervised_sandbox, a_ready_frame_for_another_sandbox_ends_it_too) {
  const auto why = end_after({{"event", "ready"},
                              {"id", "another"},
                              {"pid", 1},
                              {"host_uid", 1000},
                              {"host_gid", 1000},
                              {"expires_at", 0}});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("another supervisor"), std::string::npos) << *why;
}

TEST(supervised_sandbox, open_egress_asked_before_ready_goes_after_it_and_gets_the_reply) {
  attached_sandbox s;
  auto& io = s.io;
  auto& peer = s.peer;
  auto& box = s.box;
  box->attach(0);
  std::optional<std::string> opened;
  box->open_egress([&](const std::string& error) { opened = error; });
  s.accept();
  net::write(peer, net::buffer(sandgate::sandboxing::control::encode_frame({{"event", "ready"},
                                                                            {"id", s.opts.id},
                                                                            {"pid", 1},
                                                                            {"host_uid", 0},
                                                                            {"host_gid", 0},
                                                                            {"expires_at", 0}})));
  // The stand-in reads the request the gateway sent once the supervisor was ready.
  sandgate::sandboxing::control::frame_decoder decoder;
  std::optional<nlohmann::json> request;
  std::array<char, 4096> buf{};
  peer.non_blocking(true);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!request && std::chrono::steady_clock::now() < deadline) {
    io.run_for(std::chrono::milliseconds(20));
    boost::system::error_code ec;
    const auto n = peer.read_some(net::buffer(buf), ec);
    if (!ec) decoder.feed({buf.data(), n});
    std::error_code fec;
    request = decoder.next(fec);
  }
  ASSERT_TRUE(request);
  EXPECT_EQ(request->value("op", ""), "open_egress");
  net::write(peer,
             net::buffer(sandgate::sandboxing::control::encode_frame(
                 {{"req", request->at("req")}, {"ok", false}, {"error", "bind(127.0.0.1:3128): in use"}})));
  while (!opened && std::chrono::steady_clock::now() < deadline)
    io.run_for(std::chrono::milliseconds(20));
  box->leave_running();
  ASSERT_TRUE(opened);
  EXPECT_EQ(*opened, "bind(127.0.0.1:3128): in use");
}

}  // namespace
