// kernel_process over a stand-in sandbox that records what it is asked and
// reports exits when the test says: the spawn request built from the
// kernelspec, the stop ladder, and which exits count.

#include "kernels/kernel_process.hpp"

#include <jupyter_protocol/journal.hpp>

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

namespace sandgate::gateway {
namespace {

class recording_sandbox final : public sandbox {
 public:
  explicit recording_sandbox(std::filesystem::path run_dir) : run_dir_(std::move(run_dir)) {}

  void spawn(const spawn_request& req, spawn_handler on_spawned, exit_handler on_exit,
             output_handler) override {
    spawned.push_back(req);
    exits.push_back(std::move(on_exit));
    on_spawned({});
  }
  void reclaim(const std::string& name, spawn_handler on_found, exit_handler on_exit) override {
    adopted.push_back(name);
    exits.push_back(std::move(on_exit));
    on_found({});
  }
  void signal(const std::string& name, int sig) override { signals.emplace_back(name, sig); }
  void kill_tree(const std::string& name) override { killed.push_back(name); }
  void extend(std::int64_t, spawn_handler done) override { done({}); }
  void open_egress(spawn_handler done) override { done({}); }
  sandboxing::unique_fd copy_egress_listener(std::string& error) override {
    error = "no egress here";
    return {};
  }
  void when_ready(spawn_handler done) override { done({}); }
  void on_end(end_handler) override {}
  void destroy(const std::string&) override {}
  void call(nlohmann::json, std::function<void(const sandboxing::control::reply&)>) override {}
  sandboxing::unique_fd copy_descriptor(int, std::string&) override { return {}; }
  sandboxing::unique_fd port_socket(std::string&) override { return {}; }
  bool leave_running() override { return false; }
  [[nodiscard]] int open_workspace() const override { return -1; }
  [[nodiscard]] std::filesystem::path run_dir_host() const override { return run_dir_; }
  [[nodiscard]] std::filesystem::path run_dir_inside() const override { return "/run/sandgate"; }
  [[nodiscard]] std::string workspace_inside() const override { return "/workspace"; }
  [[nodiscard]] uid_t owner_uid() const override { return ::getuid(); }
  [[nodiscard]] gid_t owner_gid() const override { return ::getgid(); }
  void give_file(const std::filesystem::path&) override {}

  std::vector<spawn_request> spawned;
  std::vector<exit_handler> exits;
  std::vector<std::string> adopted;
  std::vector<std::pair<std::string, int>> signals;
  std::vector<std::string> killed;

 private:
  std::filesystem::path run_dir_;
};

class kernel_process_test : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string path = (std::filesystem::temp_directory_path() / "sandgate-kprocess-XXXXXX").string();
    dir_ = ::mkdtemp(path.data());
    box_ = std::make_shared<recording_sandbox>(dir_);
    limits_.shutdown_grace = std::chrono::seconds(0);
    process_ = std::make_shared<kernel_process>(io_, "kernel-id", box_, "k12345678", limits_);
    opts_.id = "kernel-id";
    opts_.spec.name = "python";
    opts_.spec.dir = "/usr/share/jupyter/kernels/python";
    opts_.spec.argv = {"/opt/build/bin/sandgate-python", "-f", "{connection_file}", "--res={resource_dir}"};
    opts_.spec.env = {{"FROM_SPEC", "1"}, {"BOTH", "spec"}};
    opts_.env = {{"BOTH", "request"}};
    opts_.program_dirs = {{"/opt/build/bin", "/run/programs/0"}};
    opts_.spec.iopub_journal = true;
    conn_.transport = "ipc";
    conn_.ip = "/run/sandgate/k12345678";
    conn_.key = "secret";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  boost::asio::io_context io_;
  std::filesystem::path dir_;
  std::shared_ptr<recording_sandbox> box_;
  kernel_limits limits_;
  std::shared_ptr<kernel_process> process_;
  kernel_options opts_;
  protocol::connection_info conn_;
};

TEST_F(kernel_process_test, launch_writes_the_connection_file_and_spawns_as_the_kernelspec_says) {
  std::string spawned_error = "not called";
  process_->launch(
      opts_, conn_, [&](const std::string& e) { spawned_error = e; }, [](const exit_status&) {});
  EXPECT_EQ(spawned_error, "");
  EXPECT_TRUE(process_->running());
  EXPECT_TRUE(std::filesystem::exists(dir_ / "k12345678.json"));
  ASSERT_EQ(box_->spawned.size(), 1u);
  const auto& req = box_->spawned[0];
  EXPECT_EQ(req.name, "k12345678");
  EXPECT_EQ(req.argv,
            (std::vector<std::string>{"/run/programs/0/sandgate-python", "-f", "/run/sandgate/k12345678.json",
                                      "--res=/usr/share/jupyter/kernels/python"}));
  EXPECT_EQ(req.env.at("FROM_SPEC"), "1");
  EXPECT_EQ(req.env.at("BOTH"), "request");
  EXPECT_EQ(req.env.at("HOME"), "/workspace");
  EXPECT_EQ(req.env.at("JPY_SESSION_NAME"), "kernel-id");
  EXPECT_EQ(req.env.at(protocol::journal_path_env), "/run/sandgate/k12345678.journal");
  EXPECT_EQ(req.env.at(protocol::journal_bytes_env), std::to_string(limits_.journal_bytes));
  EXPECT_EQ(req.cwd, "/workspace");
}

TEST_F(kernel_process_test, the_stop_ladder_asks_then_terms_then_kills_then_gives_up) {
  process_->launch(
      opts_, conn_, [](const std::string&) {}, [](const exit_status&) {});
  int asked = 0;
  int stopped = 0;
  process_->stop([&] { ++asked; }, [&] { ++stopped; });
  EXPECT_EQ(asked, 1);
  io_.run_for(std::chrono::milliseconds(200));
  EXPECT_EQ(stopped, 1);
  EXPECT_EQ(box_->signals,
            (std::vector<std::pair<std::string, int>>{{"k12345678", SIGTERM}, {"k12345678", SIGKILL}}));
  EXPECT_FALSE(process_->running());
}

TEST_F(kernel_process_test, an_exit_during_the_ladder_ends_it_and_is_not_reported_as_unasked) {
  process_->launch(
      opts_, conn_, [](const std::string&) {}, [](const exit_status&) { ADD_FAILURE() << "unasked"; });
  int stopped = 0;
  process_->stop([&] { box_->exits.back()(exit_status{0, 0}); }, [&] { ++stopped; });
  io_.run_for(std::chrono::milliseconds(100));
  EXPECT_EQ(stopped, 1);
  EXPECT_TRUE(box_->signals.empty());
}

TEST_F(kernel_process_test, only_the_current_generation_exit_counts) {
  int exits = 0;
  process_->launch(
      opts_, conn_, [](const std::string&) {}, [&](const exit_status&) { ++exits; });
  process_->launch(
      opts_, conn_, [](const std::string&) {}, [&](const exit_status&) { ++exits; });
  box_->exits[0](exit_status{1, 0});  // the first launch's process, ended late
  EXPECT_EQ(exits, 0);
  EXPECT_TRUE(process_->running());
  box_->exits[1](exit_status{0, 9});
  EXPECT_EQ(exits, 1);
  EXPECT_FALSE(process_->running());
}

TEST_F(kernel_process_test, stop_of_a_process_not_running_ends_on_the_next_turn) {
  int stopped = 0;
  process_->stop([] { ADD_FAILURE() << "nothing to ask"; }, [&] { ++stopped; });
  EXPECT_EQ(stopped, 0);  // never inside the caller's own call
  io_.run_for(std::chrono::milliseconds(50));
  EXPECT_EQ(stopped, 1);
}

TEST_F(kernel_process_test, the_ready_deadline_fires_unless_cancelled) {
  int late = 0;
  process_->expect_ready_within(std::chrono::seconds(0), [&] { ++late; });
  io_.run_for(std::chrono::milliseconds(50));
  EXPECT_EQ(late, 1);
  io_.restart();
  process_->expect_ready_within(std::chrono::seconds(0), [&] { ++late; });
  process_->cancel_ready_deadline();
  io_.run_for(std::chrono::milliseconds(50));
  EXPECT_EQ(late, 1);
}

TEST_F(kernel_process_test, remove_traces_kills_the_tree_and_removes_the_files) {
  process_->launch(
      opts_, conn_, [](const std::string&) {}, [](const exit_status&) {});
  process_->remove_traces();
  EXPECT_EQ(box_->killed, std::vector<std::string>{"k12345678"});
  EXPECT_FALSE(std::filesystem::exists(dir_ / "k12345678.json"));
}

}  // namespace
}  // namespace sandgate::gateway
