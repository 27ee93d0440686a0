#include <jupyter_protocol/connection_file.hpp>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace sandgate::protocol {
namespace {

namespace fs = std::filesystem;

class connection_file : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sandgate-cf-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

connection_info sample() {
  connection_info info;
  info.transport = "ipc";
  info.ip = "/run/sandgate/k1/kernel";
  info.shell_port = 1;
  info.iopub_port = 2;
  info.stdin_port = 3;
  info.control_port = 4;
  info.hb_port = 5;
  info.key = "a0b1c2d3-secret";
  info.kernel_name = "python3";
  return info;
}

TEST_F(connection_file, endpoints) {
  auto info = sample();
  EXPECT_EQ(info.endpoint(channel::shell), "ipc:///run/sandgate/k1/kernel-1");
  EXPECT_EQ(info.endpoint(channel::hb), "ipc:///run/sandgate/k1/kernel-5");
  info.transport = "tcp";
  info.ip = "127.0.0.1";
  info.iopub_port = 50123;
  EXPECT_EQ(info.endpoint(channel::iopub), "tcp://127.0.0.1:50123");
  EXPECT_EQ(info.endpoint(channel::control), "tcp://127.0.0.1:4");
  EXPECT_EQ(info.endpoint(channel::stdin_), "tcp://127.0.0.1:3");
}

TEST_F(connection_file, write_read_round_trip_with_mode_0600) {
  const auto path = dir_ / "kernel-1.json";
  const mode_t old_mask = ::umask(0);
  write_connection_file(path, sample());
  ::umask(old_mask);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const auto back = read_connection_file(path);
  EXPECT_EQ(back.transport, "ipc");
  EXPECT_EQ(back.ip, sample().ip);
  EXPECT_EQ(back.shell_port, 1);
  EXPECT_EQ(back.hb_port, 5);
  EXPECT_EQ(back.key, sample().key);
  EXPECT_EQ(back.signature_scheme, "hmac-sha256");
  EXPECT_EQ(back.kernel_name, "python3");

  // Replacing keeps 0600 and leaves no temporary files behind.
  auto changed = sample();
  changed.key = "new";
  write_connection_file(path, changed);
  EXPECT_EQ(read_connection_file(path).key, "new");
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(connection_file, reads_what_jupyter_client_writes) {
  const auto info = connection_info_from_json(R"({
  "shell_port": 53794, "iopub_port": 35125, "stdin_port": 36431, "control_port": 45593, "hb_port": 45331,
  "ip": "127.0.0.1", "key": "1f2e3d4c-5b6a7988", "transport": "tcp",
  "signature_scheme": "hmac-sha256", "kernel_name": ""})");
  EXPECT_EQ(info.transport, "tcp");
  EXPECT_EQ(info.control_port, 45593);
  EXPECT_EQ(info.endpoint(channel::shell), "tcp://127.0.0.1:53794");
  const auto j = nlohmann::json::parse(to_json(info));
  EXPECT_EQ(j["hb_port"], 45331);
  EXPECT_EQ(j["key"], "1f2e3d4c-5b6a7988");
  EXPECT_EQ(j["signature_scheme"], "hmac-sha256");
}

TEST_F(connection_file, rejects_bad_files_clearly) {
  const std::string ports = R"("shell_port":1,"iopub_port":2,"stdin_port":3,"control_port":4,"hb_port":5)";
  for (const std::string& text : std::vector<std::string>{
           std::string("not json"),
           std::string("[]"),
           "{" + ports + "}",                                // no ip
           R"({"ip":"x","shell_port":1})",                   // missing ports
           "{" + ports + R"(,"ip":"x","transport":"udp"})",  // bad transport
           R"({"ip":"x","shell_port":70000,"iopub_port":2,"stdin_port":3,"control_port":4,"hb_port":5})",
           R"({"ip":"x","shell_port":-1,"iopub_port":2,"stdin_port":3,"control_port":4,"hb_port":5})",
           "{" + ports + R"(,"ip":"x","key":5})",
       }) {
    SCOPED_TRACE(text);
    EXPECT_THROW((void)connection_info_from_json(text), std::invalid_argument);
  }
  EXPECT_THROW((void)read_connection_file(dir_ / "missing.json"), std::system_error);
  EXPECT_THROW(write_connection_file(dir_ / "no-such-dir" / "k.json", sample()), std::system_error);
}

}  // namespace
}  // namespace sandgate::protocol
