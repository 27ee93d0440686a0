#include "sandboxing/spawn.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "clone_into_cgroup.hpp"
#include "sandboxing/privileges.hpp"
#include "sandboxing/seccomp.hpp"
#include "sandboxing/sys_error.hpp"
#include "sandboxing/unique_fd.hpp"
#include "timing.hpp"

namespace sandgate::sandboxing {
namespace {

void reset_signals() {
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);  // NOLINT(concurrency-mt-unsafe): a child, one thread
}

// A copy of a caller's descriptor above 2, so that dup2 onto 0-2 cannot
// overwrite a source that happens to sit there.
unique_fd high_copy(int fd, const char* what) {
  unique_fd copy(::fcntl(fd, F_DUPFD_CLOEXEC, 3));
  if (!copy) throw sys_error(std::string("fcntl(") + what + ", F_DUPFD_CLOEXEC)", errno);
  return copy;
}

void open_stdio(const spawn_spec& spec) {
  if (spec.inherit_stdio) return;
  unique_fd in = spec.stdin_fd >= 0 ? high_copy(spec.stdin_fd, "stdin pipe")
                                    : unique_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!in) throw sys_error("open(/dev/null)", errno);
  unique_fd out, err;
  if (spec.stdout_fd < 0 || spec.stderr_fd < 0) {
    const std::string out_path = spec.log.empty() ? "/dev/null" : spec.log;
    // O_NONBLOCK: a FIFO planted at the log path must not hang the supervisor,
    // which waits for this child to exec.
    out.reset(::open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK | O_CLOEXEC, 0600));
    if (!out) throw sys_error("open(" + out_path + ", O_WRONLY|O_CREAT|O_APPEND)", errno);
    check_sys(::fcntl(out.get(), F_SETFL, O_APPEND), "fcntl(" + out_path + ", F_SETFL, O_APPEND)");
  }
  if (spec.stdout_fd >= 0) out = high_copy(spec.stdout_fd, "stdout pipe");
  if (spec.stderr_fd >= 0) {
    err = high_copy(spec.stderr_fd, "stderr pipe");
  } else {
    err.reset(::fcntl(out.get(), F_DUPFD_CLOEXEC, 3));
  }
  check_sys(::dup2(in.get(), 0), "dup2(stdin)");
  check_sys(::dup2(out.get(), 1), "dup2(stdout)");
  check_sys(::dup2(err.get(), 2), "dup2(stderr)");
}

void join_own_cgroup(int procs_fd) {
  if (procs_fd < 0) return;
  check_sys(::write(procs_fd, "0", 1), "write(<child cgroup>/cgroup.procs, \"0\")");
}

// Everything between fork and execve; throws on the first failed step.
[[noreturn]] void become_program(const spawn_spec& spec, const confinement& c, bool in_cgroup) {
  detail::timing_mark("child: forked");
  if (!in_cgroup) join_own_cgroup(spec.cgroup_procs_fd);
  detail::timing_mark("child: joined its cgroup");
  reset_signals();
  check_sys(::setsid(), "setsid()");
  if (spec.tty_fd >= 0) check_sys(::ioctl(spec.tty_fd, TIOCSCTTY, 0), "ioctl(tty, TIOCSCTTY)");
  {
    unique_fd adj(::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC));
    if (adj) (void)!::write(adj.get(), "0", 1);
  }
  apply_rlimits(c.rlimits);
  detail::timing_mark("child: session and rlimits");
  drop_privileges(c.uid, c.gid, c.may_setgroups);
  detail::timing_mark("child: privileges dropped");
  open_stdio(spec);
  check_sys(::chdir(spec.cwd.c_str()), "chdir(" + spec.cwd + ")");
  set_no_new_privs();
  const std::string program = resolve_program(spec.argv.at(0), spec.env);
  std::vector<std::string> env_text;
  env_text.reserve(spec.env.size());
  for (const auto& [key, value] : spec.env)
    env_text.push_back(key + "=" + value);
  std::vector<char*> argv;
  std::vector<char*> envp;
  argv.reserve(spec.argv.size() + 1);
  envp.reserve(env_text.size() + 1);
  for (const auto& a : spec.argv)
    argv.push_back(const_cast<char*>(a.c_str()));
  for (const auto& e : env_text)
    envp.push_back(const_cast<char*>(e.c_str()));
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  check_sys(::syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC),
            "close_range(3, ~0, CLOSE_RANGE_CLOEXEC)");
  detail::timing_mark("child: environment ready");
  load_seccomp_filter();
  detail::timing_mark("child: seccomp loaded, execve");
  ::execve(program.c_str(), argv.data(), envp.data());
  throw sys_error("execve(" + program + ")", errno);
}

}  // namespace

std::string resolve_program(const std::string& argv0, const std::map<std::string, std::string>& env) {
  if (argv0.find('/') != std::string::npos) return argv0;
  const auto it = env.find("PATH");
  const std::string path = it != env.end() ? it->second : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find(':', start), path.size());
    const std::string dir = end > start ? path.substr(start, end - start) : ".";
    std::string candidate = dir + "/" + argv0;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return argv0;
}

pid_t spawn_confined(const spawn_spec& spec, const confinement& c) {
  if (spec.argv.empty() || spec.argv[0].empty()) throw std::runtime_error("spawn: argv must not be empty");
  int pipe_fds[2];
  check_sys(::pipe2(pipe_fds, O_CLOEXEC), "pipe2(O_CLOEXEC)");
  unique_fd read_end(pipe_fds[0]);
  unique_fd write_end(pipe_fds[1]);
  bool in_cgroup = false;
  long forked = -1;
  if (spec.cgroup_dir_fd >= 0) {
    forked = detail::clone_into_cgroup(0, spec.cgroup_dir_fd);
    in_cgroup = forked >= 0;
    if (forked < 0 && errno != ENOSYS && errno != E2BIG && errno != EINVAL) {
      throw sys_error("clone3(CLONE_INTO_CGROUP)", errno);
    }
  }
  if (!in_cgroup) forked = check_sys(::fork(), "fork()");
  const auto pid = static_cast<pid_t>(forked);
  if (pid > 0) detail::timing_mark("spawn: forked (parent)");
  if (pid == 0) {
    read_end.reset();
    std::string error;
    try {
      become_program(spec, c, in_cgroup);
    } catch (const std::exception& e) {
      error = e.what();
    }
    (void)!::write(write_end.get(), error.data(), error.size());
    ::_exit(127);
  }
  write_end.reset();
  std::string error;
  char buffer[512];
  for (;;) {
    const ssize_t n = ::read(read_end.get(), buffer, sizeof buffer);
    if (n > 0) {
      error.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  if (!error.empty()) {
    ::waitpid(pid, nullptr, 0);
    throw std::runtime_error(error);
  }
  return pid;
}

}  // namespace sandgate::sandboxing
