#include "sandboxing/launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "host_resources.hpp"
#include "resident_memory.hpp"
#include "sandbox_init.hpp"
#include "sandboxing/cgroups.hpp"
#include "sandboxing/sys_error.hpp"
#include "timing.hpp"

extern char** environ;

namespace sandgate::sandboxing {
namespace {

constexpr int ttl_grace_s = 10;
constexpr int release_pages_after_ms = 500;

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

// Keeps the OOM killer off the supervisor; needs CAP_SYS_RESOURCE, best
// effort. No exception on failure: the first throw in this static program
// costs milliseconds (libgcc sorts every unwind entry of the binary).
void keep_oom_killer_off(pid_t inner) {
  const std::string path = "/proc/" + std::to_string(inner) + "/oom_score_adj";
  unique_fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (fd) (void)!::write(fd.get(), "-1000", 5);
}

std::map<std::string, std::string> standalone_env(const policy& p,
                                                  const std::map<std::string, std::string>& base) {
  std::map<std::string, std::string> env = base;
  for (const auto& name : p.env.pass) {
    if (const char* value = std::getenv(name.c_str())) env[name] = value;
  }
  return env;
}

// The host side once the inner process runs: forward signals, enforce the
// TTL as a backstop (following the deadlines the supervisor reports on
// outer_fd when the gateway moves it), and return the inner process's status.
int wait_for_inner(pid_t inner, std::int64_t expires_at, unique_fd outer_fd) {
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT})
    sigaddset(&mask, sig);
  unique_fd signals(::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals) throw sys_error("signalfd", errno);
  bool pages_released = false;
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
    pollfd fds[2] = {{signals.get(), POLLIN, 0}, {outer_fd.get(), POLLIN, 0}};
    // From here on this process only waits: once the start is over, the
    // pages of code its setup touched are let go.
    const int wait_ms =
        pages_released ? static_cast<int>(std::min<std::int64_t>(left, 3600) * 1000) : release_pages_after_ms;
    const int n = ::poll(fds, outer_fd ? 2 : 1, wait_ms);
    if (n < 0 && errno != EINTR) throw sys_error("poll", errno);
    if (n == 0 && !pages_released) {
      detail::release_idle_memory();
      pages_released = true;
    }
    if (n <= 0) continue;
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info{};
      while (::read(signals.get(), &info, sizeof info) == sizeof info) {
        const auto sig = static_cast<int>(info.ssi_signo);
        if (sig != SIGCHLD) ::kill(inner, sig);
      }
    }
    if (outer_fd && fds[1].revents != 0) {
      char message[deadline_message_bytes];
      const ssize_t got = ::recv(outer_fd.get(), message, sizeof message, MSG_DONTWAIT);
      if (got == static_cast<ssize_t>(sizeof message) && message[0] == 'T') {
        std::int64_t moved = 0;
        std::memcpy(&moved, message + 1, sizeof moved);
        if (moved <= ::time(nullptr) + max_deadline_ahead_s) expires_at = moved;
      } else if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
        outer_fd.reset();  // the supervisor is gone (or broke the channel): only waitpid is left
      }
    }
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

namespace {

struct host_cgroup {
  cgroup group;
  unique_fd oom_counter;
  unique_fd tracking;  // where the supervisor makes per-child cgroups, or empty
};

// The host's cgroup layout; throws when there is none and one is required.
cgroup_layout find_cgroups(const launch_options& options) {
  cgroup_layout layout = detect_cgroups(options.cgroup_root);
  if ((layout.version == cgroup_version::none || layout.partial) && options.require_cgroup) {
    throw sys_error(
        "cgroups: no v2 memory+pids controllers nor v1 memory+pids hierarchies under " + options.cgroup_root,
        ENOENT);
  }
  return layout;
}

// The sandbox's cgroup, or none when the host has none and that is allowed.
host_cgroup make_cgroup(const launch_options& options, const cgroup_layout& layout, const id_plan& ids) {
  host_cgroup result;
  try {
    result.group = cgroup::create(layout, options.cgroup_parent, options.id, options.sandbox_policy.limits);
    result.oom_counter = result.group.open_oom_counter();
    detail::timing_mark("outer: cgroup created");
  } catch (const sys_error& e) {
    if (options.require_cgroup) throw;
    std::fprintf(stderr, "sandgate-sandbox: running without cgroup limits: %s\n", e.what());
    result.group = cgroup();
  }
  const std::string tracking = result.group.tracking_dir();
  if (!tracking.empty()) {
    try {
      result.group.delegate_tracking(ids.supervisor_host_uid, ids.supervisor_host_gid);
      result.tracking.reset(::open(tracking.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!result.tracking) throw sys_error("open(" + tracking + ", O_DIRECTORY)", errno);
    } catch (const sys_error& e) {
      if (options.require_cgroup) throw;
      std::fprintf(stderr, "sandgate-sandbox: kill reaches only process groups and sessions: %s\n", e.what());
      result.tracking.reset();
    }
  }
  return result;
}

void plan_rootfs(const launch_options& options, rootfs_plan& rootfs) {
  const policy& p = options.sandbox_policy;
  // The inner process opens these paths itself (a mount from the host's
  // mount namespace cannot be bound in the sandbox's).
  rootfs.run_source = options.run_dir;
  rootfs.workspace_source = options.workspace_dir;
  rootfs.extra = p.mounts;
  rootfs.workspace_bytes = p.limits.workspace_bytes;
  rootfs.tmp_bytes = p.limits.tmp_bytes;
  rootfs.uid = p.uid;
  rootfs.gid = p.gid;
  rootfs.hostname = p.hostname;
}

void plan_supervisor(const launch_options& options, const id_plan& ids, supervisor_config& s) {
  const policy& p = options.sandbox_policy;
  s.id = options.id;
  s.confine = {p.limits, p.uid, p.gid, ids.privileged};
  s.base_env = p.env.set;
  // The first whole second at least ttl_s from now, never sooner than asked.
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  s.expires_at =
      static_cast<std::int64_t>(now.tv_sec) + static_cast<std::int64_t>(p.ttl_s) + (now.tv_nsec > 0 ? 1 : 0);
  s.max_execution_s = p.max_execution_s;
  if (egress_on(p.network)) {
    // Programs find the proxy without being told (curl, urllib, pip, git, npm);
    // the policy's own env.set wins.
    s.egress_port = egress_proxy_port;
    const std::string proxy = "http://127.0.0.1:" + std::to_string(egress_proxy_port);
    for (const char* name : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"})
      s.base_env.emplace(name, proxy);
    for (const char* name : {"NO_PROXY", "no_proxy"})
      s.base_env.emplace(name, "localhost,127.0.0.1");
  }
  s.outer_pid = ::getpid();
  s.host_uid = ids.host_uid;
  s.host_gid = ids.host_gid;
  if (options.control_path.empty()) {
    s.standalone = spawn_spec{options.command, standalone_env(p, s.base_env), "/workspace", "", true};
  }
}

// Clones the inner process, gives it its maps and cgroup, lets it run the
// setup and waits for its verdict. Returns its pid and keeps the outer end
// of the handshake socket in outer_end (the supervisor reports TTL changes
// there); throws with the failed step's error after reaping it.
pid_t start_inner(detail::init_plan& plan, const launch_options& options, const cgroup_layout& layout,
                  host_cgroup& cg, unique_fd& outer_end) {
  int pair[2];
  check_sys(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair),
            "socketpair(AF_UNIX, SOCK_SEQPACKET)");
  unique_fd parent_end(pair[0]);
  unique_fd child_end(pair[1]);
  std::fflush(nullptr);
  // The network namespace is made by the inner process itself, while this
  // one writes its id maps (see run_inner).
  const unsigned long flags =
      CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | SIGCHLD;
  const long pid = ::syscall(SYS_clone, flags, nullptr, nullptr, nullptr, nullptr);
  if (pid == -1) {
    throw sys_error("clone(CLONE_NEWUSER|CLONE_NEWPID|CLONE_NEWNS|CLONE_NEWIPC|CLONE_NEWUTS)", errno);
  }
  if (pid == 0) {
    parent_end.reset();
    detail::run_inner(plan, child_end.release());
  }
  const auto inner = static_cast<pid_t>(pid);
  detail::timing_mark("outer: cloned");
  child_end.reset();
  std::string error;
  try {
    // While the inner process makes its network namespace and opens its bind
    // sources: its id maps, the cgroup (made now, off the critical path),
    // and moving it in.
    write_id_maps(inner, plan.ids);
    detail::timing_mark("outer: id maps written");
    cg = make_cgroup(options, layout, plan.ids);
    cg.group.add(inner);
    detail::timing_mark("outer: inner in cgroup");
    keep_oom_killer_off(inner);
    detail::go_message go;
    go.host_pid = inner;
    go.child_cgroup_version = cg.group.version();
    detail::send_go(parent_end.get(), go, cg.oom_counter.get(), cg.tracking.get());
    detail::timing_mark("outer: go sent");
    char reply[4096];
    const ssize_t n = ::recv(parent_end.get(), reply, sizeof reply, 0);
    detail::timing_mark("outer: setup reported");
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
    throw std::runtime_error(error);
  }
  outer_end = std::move(parent_end);
  return inner;
}

// Removes what the outer process made on the host, on every path out.
struct host_cleanup {
  const launch_options& options;
  bool run_dir_created = false;
  ~host_cleanup() {
    if (!options.control_path.empty()) ::unlink(options.control_path.c_str());
    if (run_dir_created) detail::remove_tree(options.run_dir);
  }
};

}  // namespace

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
  const cgroup_layout layout = find_cgroups(options);

  host_cleanup cleanup{options};
  unique_fd run_dir, workspace;
  bool workspace_created = false;
  if (!options.run_dir.empty()) {
    run_dir = detail::prepare_owned_dir(options.run_dir, plan.ids.host_uid, plan.ids.host_gid, true,
                                        cleanup.run_dir_created);
  }
  if (!options.workspace_dir.empty()) {
    struct stat before {};
    const bool known = ::lstat(options.workspace_dir.c_str(), &before) == 0;
    workspace = detail::prepare_owned_dir(options.workspace_dir, plan.ids.host_uid, plan.ids.host_gid, true,
                                          workspace_created);
    if (known && before.st_uid != plan.ids.host_uid) {
      detail::chown_tree(options.workspace_dir, plan.ids.host_uid, plan.ids.host_gid);
    }
  }
  unique_fd listener;
  if (control_mode) listener = detail::listen_control_socket(options.control_path);
  plan_rootfs(options, plan.rootfs);
  plan_supervisor(options, plan.ids, plan.supervisor);
  plan.supervisor.listen_fd = listener.get();

  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT})
    sigaddset(&mask, sig);
  // NOLINTNEXTLINE(concurrency-mt-unsafe): sandgate-sandbox has one thread
  check_sys(::sigprocmask(SIG_BLOCK, &mask, nullptr), "sigprocmask(SIG_BLOCK)");
  ::signal(SIGPIPE, SIG_IGN);
  detail::timing_mark("outer: host side prepared");

  pid_t inner = 0;
  unique_fd outer_end;
  host_cgroup cg;  // made by start_inner, removed when the sandbox ends
  try {
    inner = start_inner(plan, options, layout, cg, outer_end);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sandgate-sandbox: %s\n", e.what());
    return setup_failed_exit;
  }
  listener.reset();  // the supervisor holds these now
  cg.tracking.reset();
  cg.oom_counter.reset();
  // Off the start's critical path: the sandbox already runs.
  if (cg.group.version() != cgroup_version::none) sweep_stale_cgroups(layout, options.cgroup_parent, 60);
  const int status = wait_for_inner(inner, plan.supervisor.expires_at, std::move(outer_end));
  detail::timing_mark("outer: inner ended");
  cg.group.remove();
  detail::timing_mark("outer: cgroup removed");
  return status;
}

}  // namespace sandgate::sandboxing
