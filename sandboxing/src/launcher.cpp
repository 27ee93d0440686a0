#include "sandboxing/launcher.hpp"

#include <sched.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "host_resources.hpp"
#include "sandbox_init.hpp"
#include "sandboxing/cgroups.hpp"
#include "sandboxing/sys_error.hpp"

extern char** environ;

namespace sandgate::sandboxing {
namespace {

constexpr int ttl_grace_s = 10;

std::string random_id() {
  unsigned char bytes[8];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes))
    throw sys_error("getrandom", errno);
  static const char hex[] = "0123456789abcdef";
  std::string id;
  for (unsigned char b : bytes) {
    id += hex[b >> 4];
    id += hex[b & 15];
  }
  return id;
}

std::map<std::string, std::string> standalone_env(const policy& p) {
  std::map<std::string, std::string> env = p.env.set;
  for (const auto& name : p.env.pass) {
    if (const char* value = std::getenv(name.c_str())) env[name] = value;
  }
  return env;
}

// The host side once the inner process runs: forward signals, enforce the
// TTL as a backstop, and return the inner process's status.
int wait_for_inner(pid_t inner, std::int64_t expires_at) {
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT})
    sigaddset(&mask, sig);
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(inner, &status, WNOHANG);
    if (done == inner) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const std::int64_t left = expires_at + ttl_grace_s - ::time(nullptr);
    if (left <= 0) {
      ::kill(inner, SIGKILL);
      ::waitpid(inner, &status, 0);
      return 128 + SIGKILL;
    }
    timespec timeout{static_cast<time_t>(std::min<std::int64_t>(left, 3600)), 0};
    siginfo_t info{};
    const int sig = ::sigtimedwait(&mask, &info, &timeout);
    if (sig > 0 && sig != SIGCHLD) ::kill(inner, sig);
  }
}

}  // namespace

bool valid_sandbox_id(const std::string& id) {
  if (id.empty() || id.size() > 64 || id == "." || id == "..") return false;
  for (char c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

int launch(launch_options options) {
  const policy& p = options.sandbox_policy;
  if (options.id.empty()) options.id = random_id();
  if (!valid_sandbox_id(options.id)) throw std::invalid_argument("--id: use 1 to 64 of [A-Za-z0-9_.-]");
  const bool control_mode = !options.control_path.empty();
  if (!control_mode && options.command.empty())
    throw std::invalid_argument("give --control PATH or -- command");
  if (control_mode) ::setsid();  // leave the caller's session: a gateway restart must not reach the sandbox

  detail::init_plan plan;
  plan.sandbox_policy = &p;
  const std::uint32_t slot = options.host_id_slot.value_or(host_id_slot(options.id, default_host_id_slots));
  plan.ids = plan_ids(p.uid, p.gid, options.host_id_base, slot);

  const cgroup_layout layout = detect_cgroups(options.cgroup_root);
  if (layout.version == cgroup_version::none && options.require_cgroup) {
    throw sys_error(
        "cgroups: no v2 memory controller nor v1 memory+pids hierarchy under " + options.cgroup_root, ENOENT);
  }
  cgroup group;
  unique_fd oom_counter;
  try {
    sweep_stale_cgroups(layout, options.cgroup_parent, 60);
    group = cgroup::create(layout, options.cgroup_parent, options.id, p.limits);
    oom_counter = group.open_oom_counter();
  } catch (const sys_error& e) {
    if (options.require_cgroup) throw;
    std::fprintf(stderr, "sandgate-sandbox: running without cgroup limits: %s\n", e.what());
    group = cgroup();
  }

  bool run_dir_created = false;
  bool workspace_created = false;
  unique_fd run_dir, workspace;
  struct cleanup_t {
    const launch_options& o;
    bool& run_dir_created;
    ~cleanup_t() {
      if (!o.control_path.empty()) ::unlink(o.control_path.c_str());
      if (run_dir_created) detail::remove_tree(o.run_dir);
    }
  } cleanup{options, run_dir_created};
  // The inner process opens these paths itself (a mount from the host's
  // mount namespace cannot be bound in the sandbox's).
  if (!options.run_dir.empty()) {
    run_dir = detail::prepare_owned_dir(options.run_dir, plan.ids.host_uid, plan.ids.host_gid, true,
                                        run_dir_created);
    plan.rootfs.run_source = options.run_dir;
  }
  if (!options.workspace_dir.empty()) {
    workspace = detail::prepare_owned_dir(options.workspace_dir, plan.ids.host_uid, plan.ids.host_gid, true,
                                          workspace_created);
    plan.rootfs.workspace_source = options.workspace_dir;
  }
  plan.rootfs.extra = p.mounts;
  unique_fd listener;
  if (control_mode) listener = detail::listen_control_socket(options.control_path);

  plan.rootfs.workspace_bytes = p.limits.workspace_bytes;
  plan.rootfs.tmp_bytes = p.limits.tmp_bytes;
  plan.rootfs.uid = p.uid;
  plan.rootfs.gid = p.gid;
  plan.rootfs.hostname = p.hostname;
  auto& s = plan.supervisor;
  s.id = options.id;
  s.confine = {p.limits, p.uid, p.gid, plan.ids.privileged};
  s.base_env = p.env.set;
  s.expires_at = static_cast<std::int64_t>(::time(nullptr)) + static_cast<std::int64_t>(p.ttl_s);
  s.max_execution_s = p.max_execution_s;
  s.outer_pid = ::getpid();
  s.host_uid = plan.ids.host_uid;
  s.host_gid = plan.ids.host_gid;
  s.oom_counter_fd = oom_counter.get();
  s.listen_fd = listener.get();
  if (!control_mode) s.standalone = spawn_spec{options.command, standalone_env(p), "/workspace", "", true};

  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT})
    sigaddset(&mask, sig);
  check_sys(::sigprocmask(SIG_BLOCK, &mask, nullptr), "sigprocmask(SIG_BLOCK)");
  ::signal(SIGPIPE, SIG_IGN);

  int pair[2];
  check_sys(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair),
            "socketpair(AF_UNIX, SOCK_SEQPACKET)");
  unique_fd parent_end(pair[0]);
  unique_fd child_end(pair[1]);
  std::fflush(nullptr);
  const unsigned long flags =
      CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | SIGCHLD;
  const long pid = ::syscall(SYS_clone, flags, nullptr, nullptr, nullptr, nullptr);
  if (pid == -1)
    throw sys_error("clone(CLONE_NEWUSER|CLONE_NEWPID|CLONE_NEWNS|CLONE_NEWNET|CLONE_NEWIPC|CLONE_NEWUTS)",
                    errno);
  if (pid == 0) {
    parent_end.reset();
    detail::run_inner(plan, child_end.release());
  }
  const auto inner = static_cast<pid_t>(pid);
  child_end.reset();
  listener.reset();
  std::string error;
  try {
    write_id_maps(inner, plan.ids);
    group.add(inner);
    try {  // keep the OOM killer off the supervisor; needs CAP_SYS_RESOURCE, best effort
      write_file("/proc/" + std::to_string(inner) + "/oom_score_adj", "-1000");
    } catch (const sys_error&) {
    }
    const detail::go_message go{inner};
    check_sys(::send(parent_end.get(), &go, sizeof go, MSG_NOSIGNAL), "send(handshake go)");
    char reply[4096];
    const ssize_t n = ::recv(parent_end.get(), reply, sizeof reply, 0);
    if (n <= 0) {
      error = "sandbox setup: the inner process ended before reporting";
    } else if (reply[0] != 'O') {
      error = "sandbox setup: " + std::string(reply + 1, static_cast<std::size_t>(n - 1));
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!error.empty()) {
    ::kill(inner, SIGKILL);
    ::waitpid(inner, nullptr, 0);
    std::fprintf(stderr, "sandgate-sandbox: %s\n", error.c_str());
    return setup_failed_exit;
  }
  parent_end.reset();
  const int status = wait_for_inner(inner, s.expires_at);
  group.remove();
  return status;
}

}  // namespace sandgate::sandboxing
