#include "sandbox_init.hpp"

#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "host_resources.hpp"
#include "sandboxing/network.hpp"
#include "sandboxing/sys_error.hpp"

namespace sandgate::sandboxing::detail {
namespace {

void send_status(int fd, char kind, const std::string& text) {
  const std::string message = kind + text;
  (void)!::send(fd, message.data(), message.size(), MSG_NOSIGNAL);
}

go_message wait_for_go(int fd) {
  go_message go;
  const ssize_t n = ::recv(fd, &go, sizeof go, 0);
  if (n != static_cast<ssize_t>(sizeof go)) throw sys_error("recv(handshake go)", n < 0 ? errno : EPIPE);
  return go;
}

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

}  // namespace

void run_inner(init_plan& plan, int handshake_fd) {
  const policy& p = *plan.sandbox_policy;
  std::vector<unique_fd> pinned;
  // Out of the caller's foreground process group: terminal signals reach only
  // the outer process, which forwards them once.
  ::setpgid(0, 0);
  try {
    const go_message go = wait_for_go(handshake_fd);
    plan.supervisor.host_pid = go.host_pid;
    const step steps[] = {
        {"bind sources", [&] { pin_bind_sources(plan.rootfs, pinned); }},
        {"identity", [&] { become_supervisor_identity(plan.ids); }},
        {"cgroup namespace", [] { check_sys(::unshare(CLONE_NEWCGROUP), "unshare(CLONE_NEWCGROUP)"); }},
        {"hostname",
         [&] {
           check_sys(::sethostname(p.hostname.c_str(), p.hostname.size()), "sethostname(" + p.hostname + ")");
         }},
        {"root filesystem", [&] { build_rootfs(plan.rootfs); }},
        {"network", [&] { setup_network(p.network); }},
        {"not dumpable",
         [] { check_sys(::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE, 0)"); }},
    };
    for (const auto& s : steps) {
      try {
        s.run();
      } catch (const std::exception& e) {
        throw std::runtime_error(std::string(s.name) + ": " + e.what());
      }
    }
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
