#include "child_processes.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <cstring>
#include <system_error>

namespace sandgate::gateway {
namespace {

std::map<pid_t, std::function<void(int)>>& watched() {
  static std::map<pid_t, std::function<void(int)>> children;
  return children;
}

}  // namespace

pid_t spawn_child(const spawn_spec& spec, std::string& error) {
  std::vector<std::string> env_text;
  for (const auto& [k, v] : spec.env)
    env_text.push_back(k + "=" + v);
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv)
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
  posix_spawn_file_actions_addchdir_np(&actions, spec.cwd.c_str());
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  const std::string out = spec.log_path.empty() ? "/dev/null" : spec.log_path;
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  // Through copies far above them first, so that no dup2 replaces a
  // descriptor still to be copied; closefrom then closes the copies.
  constexpr int staging = 512;
  const int inherited = static_cast<int>(spec.inherit_fds.size());
  for (int i = 0; i < inherited; ++i)
    posix_spawn_file_actions_adddup2(&actions, spec.inherit_fds[i], staging + i);
  for (int i = 0; i < inherited; ++i)
    posix_spawn_file_actions_adddup2(&actions, staging + i, 3 + i);
  // Nothing else of the gateway's: not its listening socket, not its clients'
  // connections (Asio opens them without O_CLOEXEC), not its state.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3 + inherited);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    error = "posix_spawn(" + spec.argv[0] + "): " + std::generic_category().message(rc);
    return -1;
  }
  return pid;
}

void watch_child(pid_t pid, std::function<void(int)> on_exit) {
  watched()[pid] = std::move(on_exit);
}

bool child_running(pid_t pid) {
  return watched().count(pid) != 0;
}

void reap_children() {
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    auto it = watched().find(pid);
    if (it == watched().end()) continue;
    auto handler = std::move(it->second);
    watched().erase(it);
    if (handler) handler(status);
  }
}

}  // namespace sandgate::gateway
