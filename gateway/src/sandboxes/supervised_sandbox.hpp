#pragma once
// A sandbox run by sandgate-sandbox: the gateway starts the supervisor
// (which becomes pid 1 of new namespaces under its own cgroup) and talks to
// it over its control socket (u32 big-endian length + JSON frames).
// Requests made before the supervisor is ready wait for its "ready" event.

#include "sandbox.hpp"

#include <sandboxing/control_protocol.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>

#include <sys/types.h>
#include <deque>
#include <map>
#include <memory>
#include <set>

namespace sandgate::gateway {

struct supervisor_options {
  std::filesystem::path program;  // sandgate-sandbox
  std::filesystem::path policy_file;
  std::string id;
  std::filesystem::path run_dir;  // host side; bound at /run/sandgate inside
  std::filesystem::path control_path;
  std::filesystem::path log_path;  // the supervisor's stderr
  unsigned host_id_slot = 0;
  int host_id_lock_fd = -1;  // the slot's host-wide lock, for the supervisor to hold (-1: none)
  // tmpfs for connection files, sockets and the kernels' iopub journals; its
  // pages count against the sandbox's memory limit (the writer's cgroup)
  std::size_t run_dir_bytes = 16 * 1024 * 1024;
  std::chrono::seconds ready_timeout{30};
};

class supervised_sandbox final : public sandbox, public std::enable_shared_from_this<supervised_sandbox> {
 public:
  supervised_sandbox(boost::asio::io_context& io, supervisor_options opts);
  ~supervised_sandbox() override;

  // Starts sandgate-sandbox and connects to its control socket. Throws when
  // the program cannot be started.
  void start();
  // Connects to the control socket of a supervisor an earlier gateway
  // started. Its ready event must name this sandbox's id (and, when known,
  // its recorded pid); if it does not answer, the sandbox has ended.
  void attach(int expected_root_pid);

  void spawn(const spawn_request& req, spawn_handler on_spawned, exit_handler on_exit,
             output_handler on_output = nullptr) override;
  void signal(const std::string& name, int sig) override;
  void kill_tree(const std::string& name) override;
  void extend(std::int64_t expires_at, spawn_handler done) override;
  void when_ready(spawn_handler done) override;
  void open_egress(spawn_handler done) override;
  sandboxing::unique_fd copy_egress_listener(std::string& error) override;
  void call(nlohmann::json op, std::function<void(const sandboxing::control::reply&)> done) override {
    send(std::move(op), std::move(done));
  }
  sandboxing::unique_fd copy_descriptor(int fd, std::string& error) override;
  sandboxing::unique_fd port_socket(std::string& error) override;
  void on_end(end_handler handler) override { on_end_ = std::move(handler); }
  void reclaim(const std::string& name, spawn_handler on_found, exit_handler on_exit) override;
  void destroy(const std::string& why) override;
  bool leave_running() override;
  [[nodiscard]] int open_workspace() const override;
  // The sandbox's end of life as its supervisor reported it (unix seconds), or 0 before ready.
  [[nodiscard]] std::int64_t expires_at() const noexcept { return expires_at_; }
  // The supervisor's host pid (pid 1 inside), or 0 before ready.
  [[nodiscard]] int root_pid() const noexcept { return root_pid_; }

  [[nodiscard]] std::filesystem::path run_dir_host() const override { return opts_.run_dir; }
  [[nodiscard]] std::filesystem::path run_dir_inside() const override { return "/run/sandgate"; }
  [[nodiscard]] std::string workspace_inside() const override { return "/workspace"; }
  [[nodiscard]] uid_t owner_uid() const override { return host_uid_; }
  [[nodiscard]] gid_t owner_gid() const override { return host_gid_; }
  void give_file(const std::filesystem::path& host_path) override;

 private:
  void try_connect();
  void do_read();
  void on_frame(const nlohmann::json& frame);
  void send(nlohmann::json frame, std::function<void(const sandboxing::control::reply&)> on_reply);
  void do_write();
  void fail_all(const std::string& why);
  // Tells every process still running that it ended with the sandbox.
  void end_processes(const std::string& sandbox_ended);
  void settle_reclaims();

  struct reclaim_request {
    std::string name;
    spawn_handler on_found;
    exit_handler on_exit;
  };

  boost::asio::io_context& io_;
  supervisor_options opts_;
  boost::asio::local::stream_protocol::socket socket_;
  boost::asio::steady_timer timer_;
  std::chrono::steady_clock::time_point connect_deadline_;
  pid_t outer_pid_ = -1;
  bool ready_ = false;
  bool run_dir_mounted_ = false;
  bool destroyed_ = false;
  bool lost_ = false;      // the supervisor is gone: requests fail at once
  bool attached_ = false;  // started by an earlier gateway: not this process's child
  int expected_root_pid_ = 0;
  std::set<std::string> ready_children_;   // running when the supervisor said ready
  std::vector<reclaim_request> reclaims_;  // waiting for the ready event
  unsigned host_uid_ = 0;
  unsigned host_gid_ = 0;
  std::optional<int> egress_fd_;  // the supervisor's descriptor of 127.0.0.1:3128, from its ready event
  int root_pid_ = 0;  // host pid of the supervisor, pid 1 inside: /proc/<it>/root is the sandbox's root
  sandboxing::unique_fd root_pidfd_;  // a pidfd of it, opened when its ready event named it
  std::int64_t expires_at_ = 0;
  end_handler on_end_;
  std::uint64_t next_req_ = 1;
  std::array<char, 64 * 1024> read_buf_{};
  sandboxing::control::frame_decoder decoder_;
  std::deque<std::string> write_queue_;
  std::vector<nlohmann::json> before_ready_;  // requests waiting for the supervisor
  std::vector<std::filesystem::path> files_to_give_;
  std::map<std::uint64_t, std::function<void(const sandboxing::control::reply&)>> replies_;
  std::map<std::string, exit_handler> exits_;
  std::map<std::string, output_handler> outputs_;
};

}  // namespace sandgate::gateway
