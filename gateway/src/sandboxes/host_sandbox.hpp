#pragma once
// The unsandboxed "sandbox": processes run on the host as the gateway's
// user, each in a new session and process group, with only the environment
// given. Used only for kernelspecs the operator lists in --unsandboxed-kernels.

#include "sandbox.hpp"

#include <sys/types.h>
#include <csignal>
#include <map>

namespace sandgate::gateway {

class host_sandbox final : public sandbox {
 public:
  host_sandbox(std::filesystem::path run_dir, std::filesystem::path workspace);
  ~host_sandbox() override;
  // Removes the short names (see the constructor) that a gateway which did
  // not stop cleanly left pointing into `run_root` (the state dir's run/):
  // host processes do not outlive their gateway, so at start every one is stale.
  static void remove_stale_aliases(const std::filesystem::path& run_root);

  void spawn(const spawn_request& req, spawn_handler on_spawned, exit_handler on_exit,
             output_handler on_output = nullptr) override;
  void signal(const std::string& name, int sig) override;
  void kill_tree(const std::string& name) override { signal(name, SIGKILL); }
  void extend(std::int64_t, spawn_handler done) override { done({}); }  // the gateway's timer enforces it
  void open_egress(spawn_handler done) override {
    done("processes outside a sandbox have the host's network");
  }
  sandboxing::unique_fd copy_egress_listener(std::string& error) override {
    error = "processes outside a sandbox have the host's network";
    return {};
  }
  void call(nlohmann::json op, std::function<void(const sandboxing::control::reply&)> done) override {
    if (done)
      done(sandboxing::control::reply{op.value("req", std::uint64_t{0}), false, std::nullopt,
                                      "processes run only in sandboxes (this one is unsandboxed)", nullptr});
  }
  sandboxing::unique_fd copy_descriptor(int, std::string& error) override {
    error = "processes run only in sandboxes (this one is unsandboxed)";
    return {};
  }
  sandboxing::unique_fd port_socket(std::string& error) override {
    error = "ports are served only from sandboxes (this one is unsandboxed)";
    return {};
  }
  void when_ready(spawn_handler done) override { done({}); }
  void on_end(end_handler) override {}  // it never ends by itself
  // Processes on the host are the gateway's children: no later gateway can
  // watch them, so none reclaims them and none outlives the gateway.
  void reclaim(const std::string&, spawn_handler on_found, exit_handler) override {
    on_found("processes outside a sandbox end with the gateway that started them");
  }
  void destroy(const std::string& why) override;
  bool leave_running() override { return false; }
  [[nodiscard]] int open_workspace() const override;

  [[nodiscard]] std::filesystem::path run_dir_host() const override { return run_dir_; }
  [[nodiscard]] std::filesystem::path run_dir_inside() const override { return alias_; }
  [[nodiscard]] std::string workspace_inside() const override { return workspace_.string(); }
  [[nodiscard]] uid_t owner_uid() const override;
  [[nodiscard]] gid_t owner_gid() const override;
  void give_file(const std::filesystem::path&) override {}

 private:
  std::filesystem::path run_dir_;
  // A short name for run_dir_ that kernels are given (see the constructor).
  std::filesystem::path alias_;
  std::filesystem::path workspace_;
  std::map<std::string, pid_t> children_;
};

}  // namespace sandgate::gateway
