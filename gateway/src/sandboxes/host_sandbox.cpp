#include "host_sandbox.hpp"

#include "child_processes.hpp"

#include <gateway/ids.hpp>
#include <gateway/log.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace sandgate::gateway {
namespace {
// A run dir's short name: /tmp/sg + 6 hex digits (see the constructor).
constexpr std::string_view alias_stem = "sg";
constexpr std::size_t alias_random_bytes = 3;
}  // namespace

std::string exit_status::describe() const {
  if (oom) return "oom";
  if (signal) return "signal " + std::to_string(signal);
  return "exit " + std::to_string(code);
}

std::string describe_sandbox_end(const std::string& reason) {
  if (reason == "deleted") return "the sandbox was deleted";
  if (reason == "expired") return "the sandbox's time to live ran out";
  if (reason == "culled") return "the sandbox was ended after its idle timeout";
  return "the sandbox ended";
}

host_sandbox::host_sandbox(std::filesystem::path run_dir, std::filesystem::path workspace)
    : run_dir_(std::move(run_dir)), workspace_(std::move(workspace)) {
  std::filesystem::create_directories(run_dir_);
  std::filesystem::create_directories(workspace_);
  std::filesystem::permissions(run_dir_, std::filesystem::perms::owner_all);
  // xeus 2.4.1 kernels (Debian's xpython among them) abort on an ipc
  // endpoint longer than 31 bytes, and a run dir under the state dir is far
  // longer: kernels reach it through a symlink with a short random name
  // (/tmp/sgXXXXXX, 13 bytes; with a kernel's 9-byte file name the ip is 23).
  for (int attempt = 0; attempt < 16 && alias_.empty(); ++attempt) {
    std::filesystem::path candidate =
        std::filesystem::path("/tmp") / (std::string(alias_stem) + random_hex(alias_random_bytes));
    if (::symlink(run_dir_.c_str(), candidate.c_str()) == 0) alias_ = std::move(candidate);
  }
  if (alias_.empty()) alias_ = run_dir_;  // kernels that take long endpoints still work
}

void host_sandbox::remove_stale_aliases(const std::filesystem::path& run_root) {
  namespace fs = std::filesystem;
  const std::string prefix = run_root.string() + "/";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/tmp", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() != alias_stem.size() + 2 * alias_random_bytes || !name.starts_with(alias_stem) ||
        !entry.is_symlink(ec))
      continue;
    const auto target = fs::read_symlink(entry.path(), ec);
    if (!ec && target.string().rfind(prefix, 0) == 0) fs::remove(entry.path(), ec);
  }
}

uid_t host_sandbox::owner_uid() const {
  return ::geteuid();
}

gid_t host_sandbox::owner_gid() const {
  return ::getegid();
}

int host_sandbox::open_workspace() const {
  return ::open(workspace_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
}

host_sandbox::~host_sandbox() {
  destroy("ended");
  if (alias_ != run_dir_) ::unlink(alias_.c_str());
}

void host_sandbox::spawn(const spawn_request& req, spawn_handler on_spawned, exit_handler on_exit,
                         output_handler) {
  if (req.capture) return on_spawned("commands run only in sandboxes (this one is unsandboxed)");
  std::string error;
  const pid_t pid =
      spawn_child({req.argv, req.env, req.cwd, (run_dir_ / (req.name + ".log")).string(), {}}, error);
  if (pid < 0) return on_spawned(error);
  children_[req.name] = pid;
  watch_child(pid, [on_exit = std::move(on_exit)](int status) {
    exit_status st;
    if (WIFEXITED(status)) st.code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) st.signal = WTERMSIG(status);
    on_exit(st);
  });
  log::info("process_spawned", {{"name", req.name}, {"pid", std::to_string(pid)}, {"sandboxed", "no"}});
  on_spawned({});
}

void host_sandbox::signal(const std::string& name, int sig) {
  auto it = children_.find(name);
  if (it != children_.end() && child_running(it->second)) ::kill(-it->second, sig);  // its own process group
}

void host_sandbox::destroy(const std::string&) {
  for (const auto& [name, pid] : children_)
    if (child_running(pid)) ::kill(-pid, SIGKILL);
  children_.clear();
}

}  // namespace sandgate::gateway
