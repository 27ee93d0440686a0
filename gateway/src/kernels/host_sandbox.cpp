#include "host_sandbox.hpp"

#include <gateway/log.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <cerrno>
#include <cstring>

namespace sandgate::gateway {
namespace {

// pid -> exit handler for every host child still running, across sandboxes.
std::map<pid_t, sandbox::exit_handler>& live_children() {
  static std::map<pid_t, sandbox::exit_handler> children;
  return children;
}

}  // namespace

std::string exit_status::describe() const {
  if (oom) return "oom";
  if (signal) return "signal " + std::to_string(signal);
  return "exit " + std::to_string(code);
}

host_sandbox::host_sandbox(std::filesystem::path run_dir, std::filesystem::path workspace)
    : run_dir_(std::move(run_dir)), workspace_(std::move(workspace)) {
  std::filesystem::create_directories(run_dir_);
  std::filesystem::create_directories(workspace_);
  std::filesystem::permissions(run_dir_, std::filesystem::perms::owner_all);
}

host_sandbox::~host_sandbox() {
  destroy();
}

void host_sandbox::spawn(const spawn_request& req, spawn_handler on_spawned, exit_handler on_exit) {
  std::vector<std::string> env_text;
  for (const auto& [k, v] : req.env)
    env_text.push_back(k + "=" + v);
  std::vector<char*> argv, envp;
  for (const auto& a : req.argv)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : env_text)
    envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_init(&actions);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawn_file_actions_addchdir_np(&actions, req.cwd.c_str());
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    on_spawned("posix_spawn(" + req.argv[0] + "): " + std::strerror(rc));
    return;
  }
  children_[req.name] = pid;
  live_children()[pid] = std::move(on_exit);
  log::info("process_spawned", {{"name", req.name}, {"pid", std::to_string(pid)}});
  on_spawned({});
}

void host_sandbox::signal(const std::string& name, int sig) {
  auto it = children_.find(name);
  if (it == children_.end() || !live_children().count(it->second)) return;
  ::kill(-it->second, sig);  // its own session and process group
}

void host_sandbox::destroy() {
  for (const auto& [name, pid] : children_)
    if (live_children().count(pid)) ::kill(-pid, SIGKILL);
  children_.clear();
}

void host_sandbox::reap_children() {
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    auto it = live_children().find(pid);
    if (it == live_children().end()) continue;
    exit_status st;
    if (WIFEXITED(status)) st.code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) st.signal = WTERMSIG(status);
    auto handler = std::move(it->second);
    live_children().erase(it);
    if (handler) handler(st);
  }
}

}  // namespace sandgate::gateway
