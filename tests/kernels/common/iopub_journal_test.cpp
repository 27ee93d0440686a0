#include "sandgate_kernels/iopub_journal.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <jupyter_protocol/journal.hpp>
#include <zmq.hpp>

// Linked with the kernels' stand-ins for libzmq (libzmq_stand_ins.cpp), as the
// kernel executables are: the sockets below are made and used through them.

namespace sandgate::kernels {
namespace {

namespace fs = std::filesystem;

class iopub_journal_test : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sandgate-journal-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string endpoint(const std::string& name) const { return "ipc://" + (dir_ / name).string(); }

  std::vector<protocol::journal_record> journaled() const {
    auto read = [&](const char* suffix) {
      std::ifstream in(dir_ / ("k.journal" + std::string(suffix)), std::ios::binary);
      std::stringstream data;
      data << in.rdbuf();
      return protocol::parse_journal(data.str());
    };
    return protocol::merge_journals(read(".0"), read(".1"));
  }

  // As libxeus sends (zmq_msg_send, through cppzmq's message_t).
  static void send(zmq::socket_t& socket, const std::vector<std::string>& frames) {
    for (std::size_t i = 0; i < frames.size(); ++i) {
      zmq::message_t frame(frames[i].data(), frames[i].size());
      socket.send(frame, i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  }

  fs::path dir_;
  zmq::context_t context_{1};
};

TEST_F(iopub_journal_test, every_message_of_the_bound_pub_socket_is_journaled_before_any_reader_has_it) {
  iopub_journal journal((dir_ / "k.journal").string(), 1024 * 1024);
  // As xeus makes them: a PUB socket per publishing thread, bound inproc,
  // and the one the clients read, bound outside the process.
  zmq::socket_t inproc(context_, zmq::socket_type::pub);
  inproc.bind("inproc://publisher");
  zmq::socket_t iopub(context_, zmq::socket_type::pub);
  iopub.bind(endpoint("k-2"));
  // Sent before anyone subscribed: no reader gets it, the journal does.
  send(iopub, {"status", "<IDS|MSG>", "sig", "{\"msg_type\":\"status\"}", "{}", "{}",
               "{\"execution_state\":\"starting\"}"});
  send(inproc, {"not", "journaled"});
  send(iopub, {std::string("\0\xff buffer", 9)});
  const auto records = journaled();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].seq, 1u);
  EXPECT_EQ(records[0].frames.size(), 7u);
  EXPECT_EQ(records[0].frames[6], "{\"execution_state\":\"starting\"}");
  EXPECT_EQ(records[1].seq, 2u);
  EXPECT_EQ(records[1].frames, std::vector<std::string>{std::string("\0\xff buffer", 9)});
}

TEST_F(iopub_journal_test, a_pub_socket_a_cell_binds_later_is_not_the_kernels_iopub) {
  iopub_journal journal((dir_ / "k.journal").string(), 1024 * 1024);
  zmq::socket_t iopub(context_, zmq::socket_type::pub);
  iopub.bind(endpoint("k-2"));
  zmq::socket_t users(context_, zmq::socket_type::pub);
  users.bind(endpoint("users"));
  send(users, {"a cell's own"});
  send(iopub, {"the kernel's"});
  const auto records = journaled();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].frames, std::vector<std::string>{"the kernel's"});
}

TEST_F(iopub_journal_test, the_two_files_take_turns_within_the_budget_and_the_newest_messages_stay) {
  constexpr std::size_t budget = 64 * 1024;
  iopub_journal journal((dir_ / "k.journal").string(), budget);
  zmq::socket_t iopub(context_, zmq::socket_type::pub);
  iopub.bind(endpoint("k-2"));
  const std::string line(500, 'x');
  for (int i = 0; i < 400; ++i)
    send(iopub, {"stream", std::to_string(i) + line});
  for (const char* suffix : {".0", ".1"})
    EXPECT_LE(fs::file_size(dir_ / ("k.journal" + std::string(suffix))), budget / 2 + 1024) << suffix;
  const auto records = journaled();
  ASSERT_FALSE(records.empty());
  for (std::size_t i = 1; i < records.size(); ++i)
    EXPECT_EQ(records[i].seq, records[i - 1].seq + 1);
  EXPECT_EQ(records.back().seq, 400u);
  EXPECT_EQ(records.back().frames[1], "399" + line);
}

TEST_F(iopub_journal_test, no_journal_once_it_is_gone) {
  { iopub_journal journal((dir_ / "k.journal").string(), 1024 * 1024); }
  zmq::socket_t iopub(context_, zmq::socket_type::pub);
  iopub.bind(endpoint("k-2"));
  send(iopub, {"after"});  // nothing to write to, nothing breaks
  EXPECT_TRUE(journaled().empty());
}

}  // namespace
}  // namespace sandgate::kernels
