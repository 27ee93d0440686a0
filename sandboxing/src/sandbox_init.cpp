#include "sandbox_init.hpp"

#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "host_resources.hpp"
#include "sandboxing/network.hpp"
#include "sandboxing/sys_error.hpp"
#include "timing.hpp"

namespace sandgate::sandboxing::detail {
namespace {

void send_status(int fd, char kind, const std::string& text) {
  const std::string message = kind + text;
  (void)!::send(fd, message.data(), message.size(), MSG_NOSIGNAL);
}

// Waits for go and takes the descriptors that come with it.
go_message wait_for_go(int fd, supervisor_config& supervisor) {
  go_message go;
  iovec data{&go, sizeof go};
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  const ssize_t n = ::recvmsg(fd, &message, MSG_CMSG_CLOEXEC);
  if (n != static_cast<ssize_t>(sizeof go)) throw sys_error("recv(handshake go)", n < 0 ? errno : EPIPE);
  int fds[2] = {-1, -1};
  std::size_t count = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      std::memcpy(fds, CMSG_DATA(c), std::min<std::size_t>(count, 2) * sizeof(int));
    }
  }
  const std::size_t expected = std::size_t{go.oom_counter} + std::size_t{go.child_cgroups};
  if (count != expected || (message.msg_flags & MSG_CTRUNC))
    throw sys_error("recvmsg(handshake go, SCM_RIGHTS)", EPROTO);
  std::size_t next = 0;
  if (go.oom_counter) supervisor.oom_counter_fd = fds[next++];
  if (go.child_cgroups) {
    supervisor.child_cgroup_fd = fds[next++];
    supervisor.child_cgroup_version = go.child_cgroup_version;
  }
  supervisor.host_pid = go.host_pid;
  return go;
}

}  // namespace

void send_go(int socket_fd, go_message go, int oom_counter_fd, int child_cgroup_fd) {
  go.oom_counter = oom_counter_fd >= 0;
  go.child_cgroups = child_cgroup_fd >= 0;
  int fds[2];
  std::size_t count = 0;
  if (go.oom_counter) fds[count++] = oom_counter_fd;
  if (go.child_cgroups) fds[count++] = child_cgroup_fd;
  iovec data{&go, sizeof go};
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  if (count > 0) {
    message.msg_control = control;
    message.msg_controllen = CMSG_SPACE(count * sizeof(int));
    cmsghdr* c = CMSG_FIRSTHDR(&message);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(count * sizeof(int));
    std::memcpy(CMSG_DATA(c), fds, count * sizeof(int));
  }
  check_sys(::sendmsg(socket_fd, &message, MSG_NOSIGNAL), "sendmsg(handshake go)");
}

namespace {

// The supervisor runs as root of the user namespace when the maps allow it
// (the sandbox user cannot signal or trace it); otherwise as the sandbox user.
void become_supervisor_identity(const id_plan& ids) {
  if (!ids.privileged) return;
  const gid_t groups[] = {0};
  check_sys(::setgroups(1, groups), "setgroups([0])");
  check_sys(::setresgid(0, 0, 0), "setresgid(0)");
  check_sys(::setresuid(0, 0, 0), "setresuid(0)");
}

// Opens every caller-given bind source before anything covers /tmp or the
// identity changes, and names it by its descriptor from then on.
void pin_bind_sources(rootfs_plan& rootfs, std::vector<unique_fd>& pinned) {
  auto pin = [&](std::string& path) {
    if (path.empty()) return;
    pinned.push_back(open_path(path));
    path = fd_path(pinned.back().get());
  };
  pin(rootfs.run_source);
  pin(rootfs.workspace_source);
  for (auto& m : rootfs.extra)
    pin(m.source);
}

struct step {
  const char* name;
  std::function<void()> run;
};

// Runs steps in order; the first failure names its step.
void run_steps(const step* begin, const step* end) {
  for (const step* s = begin; s != end; ++s) {
    try {
      s->run();
      timing_mark(s->name);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string(s->name) + ": " + e.what());
    }
  }
}

}  // namespace

void run_inner(init_plan& plan, int handshake_fd) {
  const policy& p = *plan.sandbox_policy;
  std::vector<unique_fd> pinned;
  // Out of the caller's foreground process group: terminal signals reach only
  // the outer process, which forwards them once.
  ::setpgid(0, 0);
  // What needs neither the id maps nor the cgroup runs while the outer
  // process writes them (the new network namespace alone takes about a
  // millisecond). Still host root by uid here, with every capability in the
  // new user namespace only.
  const step before_go[] = {
      {"network namespace", [] { check_sys(::unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET)"); }},
      {"bind sources", [&] { pin_bind_sources(plan.rootfs, pinned); }},
      {"hostname",
       [&] {
         check_sys(::sethostname(p.hostname.c_str(), p.hostname.size()), "sethostname(" + p.hostname + ")");
       }},
      {"network", [&] { setup_network(p.network.mode); }},
  };
  const step after_go[] = {
      {"identity", [&] { become_supervisor_identity(plan.ids); }},
      {"cgroup namespace", [] { check_sys(::unshare(CLONE_NEWCGROUP), "unshare(CLONE_NEWCGROUP)"); }},
      {"root filesystem", [&] { build_rootfs(plan.rootfs); }},
      {"not dumpable", [] { check_sys(::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE, 0)"); }},
  };
  std::string early_error;
  try {
    run_steps(std::begin(before_go), std::end(before_go));
  } catch (const std::exception& e) {
    early_error = e.what();  // reported once the outer process listens for the verdict
  }
  try {
    wait_for_go(handshake_fd, plan.supervisor);
    timing_mark("inner: go received");
    if (!early_error.empty()) throw std::runtime_error(early_error);
    run_steps(std::begin(after_go), std::end(after_go));
  } catch (const std::exception& e) {
    send_status(handshake_fd, 'E', e.what());
    ::_exit(125);
  }
  send_status(handshake_fd, 'O', "");
  plan.supervisor.outer_fd = handshake_fd;  // from now on it carries TTL changes to the outer process
  int code = 1;
  try {
    code = run_supervisor(plan.supervisor);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sandgate-sandbox: supervisor: %s\n", e.what());
    ::kill(-1, SIGKILL);
  }
  std::fflush(nullptr);
  ::_exit(code);
}

}  // namespace sandgate::sandboxing::detail
