// Peer lists from --peers and --peers-file: both forms, what is refused, the
// node itself left out, and a file read again when it changes.

#include "cluster/peer_directory.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace sg = sandgate::gateway;
namespace fs = std::filesystem;

namespace {

TEST(peer_list, parses_both_forms_and_comments) {
  auto peers = sg::parse_peers(
      "2=http://10.0.0.2:8888, 3=http://node-3.example/gw\n# a comment\n4 http://[::1]:9000/\n");
  ASSERT_EQ(peers.size(), 3u);
  EXPECT_EQ(peers[0].node, 2);
  EXPECT_EQ(peers[0].host, "10.0.0.2");
  EXPECT_EQ(peers[0].port, "8888");
  EXPECT_EQ(peers[0].base, "/");
  EXPECT_EQ(peers[1].host, "node-3.example");
  EXPECT_EQ(peers[1].port, "80");
  EXPECT_EQ(peers[1].base, "/gw/");
  EXPECT_EQ(peers[2].node, 4);
  EXPECT_EQ(peers[2].host, "::1");
  EXPECT_EQ(peers[2].port, "9000");
  EXPECT_TRUE(sg::parse_peers("").empty());
  EXPECT_TRUE(sg::parse_peers("  # nothing\n").empty());
}

TEST(peer_list, refuses_what_cannot_be_reached_or_is_ambiguous) {
  for (const char* bad : {"2=", "x=http://a:1", "70000=http://a:1", "2=https://a:1", "2=ftp://a",
                          "2=not a url", "2=http://a:1,2=http://b:1", "http://a:1", "-1=http://a:1"}) {
    EXPECT_THROW((void)sg::parse_peers(bad), std::invalid_argument) << bad;
  }
}

class peer_file_test : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sandgate-peers-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    file_ = dir_ / "peers";
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& text, int seconds_later) {
    std::ofstream(file_) << text;
    // A changed file is told by its modification time: set one that differs.
    fs::last_write_time(file_, fs::file_time_type::clock::now() + std::chrono::seconds(seconds_later));
  }
  fs::path dir_;
  fs::path file_;
};

TEST_F(peer_file_test, leaves_itself_out_and_follows_the_file) {
  write("1 http://127.0.0.11:8888\n2 http://127.0.0.12:8888\n", 0);
  sg::peer_directory d(1, "3=http://127.0.0.13:8888", file_);
  ASSERT_EQ(d.peers().size(), 2u);
  EXPECT_EQ(d.peers()[0].node, 3);  // --peers first, then the file
  EXPECT_EQ(d.peers()[1].node, 2);

  write("1 http://127.0.0.11:8888\n2 http://127.0.0.12:8888\n4 http://127.0.0.14:8888\n", 10);
  ASSERT_EQ(d.peers().size(), 3u);
  EXPECT_EQ(d.peers()[2].node, 4);

  write("this is not a peer list", 20);  // the last good list stays
  EXPECT_EQ(d.peers().size(), 3u);

  write("1 http://127.0.0.11:8888\n", 30);
  ASSERT_EQ(d.peers().size(), 1u);
  EXPECT_EQ(d.peers()[0].node, 3);

  fs::remove(file_);  // gone: the last good list stays
  EXPECT_EQ(d.peers().size(), 1u);
}

TEST_F(peer_file_test, a_missing_or_bad_file_stops_the_start) {
  EXPECT_THROW(sg::peer_directory(1, "", dir_ / "absent"), std::invalid_argument);
  write("2 gopher://x", 0);
  EXPECT_THROW(sg::peer_directory(1, "", file_), std::invalid_argument);
}

}  // namespace
