#include "sandboxing/supervisor.hpp"

#include "supervisor_loop.hpp"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "resident_memory.hpp"
#include "sandboxing/cgroups.hpp"
#include "sandboxing/sys_error.hpp"
#include "timing.hpp"

namespace sandgate::sandboxing {
namespace detail {

supervisor::supervisor(const supervisor_config& config)
    : config_(config),
      expires_at_(config.expires_at),
      cgroups_(config.child_cgroup_fd >= 0
                   ? child_cgroups(unique_fd(config.child_cgroup_fd), config.child_cgroup_version)
                   : child_cgroups()) {}

void supervisor::watch(int fd, std::uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  check_sys(::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev), "epoll_ctl(ADD)");
}

void supervisor::unwatch(int fd) {
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
}

void supervisor::set_ttl(std::int64_t expires_at) {
  expires_at_ = expires_at;
  itimerspec expiry{};
  expiry.it_value.tv_sec = expires_at > 0 ? expires_at : 1;  // zero would disarm
  check_sys(::timerfd_settime(ttl_timer_.get(), TFD_TIMER_ABSTIME, &expiry, nullptr), "timerfd_settime(ttl)");
}

int supervisor::run() {
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT})
    sigaddset(&mask, sig);
  // NOLINTNEXTLINE(concurrency-mt-unsafe): the supervisor has one thread
  check_sys(::sigprocmask(SIG_BLOCK, &mask, nullptr), "sigprocmask(SIG_BLOCK)");
  ::signal(SIGPIPE, SIG_IGN);
  epoll_.reset(static_cast<int>(check_sys(::epoll_create1(EPOLL_CLOEXEC), "epoll_create1")));
  signals_.reset(static_cast<int>(check_sys(::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK), "signalfd")));
  ttl_timer_.reset(static_cast<int>(check_sys(::timerfd_create(CLOCK_REALTIME, TFD_CLOEXEC | TFD_NONBLOCK),
                                              "timerfd_create(CLOCK_REALTIME)")));
  child_timer_.reset(static_cast<int>(check_sys(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK),
                                                "timerfd_create(CLOCK_MONOTONIC)")));
  set_ttl(expires_at_);
  watch(signals_.get(), EPOLLIN);
  watch(ttl_timer_.get(), EPOLLIN);
  watch(child_timer_.get(), EPOLLIN);
  if (config_.listen_fd >= 0) watch(config_.listen_fd, EPOLLIN);
  if (config_.egress_port != 0 || config_.listen_fd >= 0) {
    // Egress may also be opened later (open_egress): the port is kept for it.
    try {
      egress_.emplace(config_.egress_port != 0 ? config_.egress_port : egress_proxy_port);
      if (config_.egress_port != 0) egress_->listen();
    } catch (const std::exception& e) {
      if (config_.egress_port != 0) throw;
      std::fprintf(stderr, "sandgate-sandbox: %s: the egress port stays free: %s\n", config_.id.c_str(),
                   e.what());
    }
  }
  update_egress_interest();
  oom_kills_seen_ = read_oom_kill_count(config_.oom_counter_fd);

  keep_heap_small();
  timing_mark("supervisor: loop ready");
  if (config_.standalone) {
    try {
      main_pid_ = spawn_confined(*config_.standalone, config_.confine);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "sandgate-sandbox: %s\n", e.what());
      return 127;
    }
  }
  while (!exit_code_) {
    epoll_event events[16];
    // Once nothing has happened for a moment after the start or a request,
    // the memory that work touched is let go (off every critical path).
    const int n = ::epoll_wait(epoll_.get(), events, 16, pages_released_ ? -1 : release_pages_after_ms);
    if (n < 0 && errno == EINTR) continue;
    check_sys(n, "epoll_wait");
    if (n == 0) {
      release_idle_memory();
      pages_released_ = true;
    }
    for (int i = 0; i < n && !exit_code_; ++i) {
      const int fd = events[i].data.fd;
      if (fd == signals_.get()) {
        on_signal();
      } else if (fd == ttl_timer_.get()) {
        if (!config_.standalone)
          std::fprintf(stderr, "sandgate-sandbox: %s: ttl expired\n", config_.id.c_str());
        finish(standalone_ttl_exit, "expired");
      } else if (fd == child_timer_.get()) {
        on_child_timer();
      } else if (fd == config_.listen_fd) {
        on_accept();
      } else if (egress_ && fd == egress_->fd()) {
        egress_->refuse_waiting();
      } else if (connection_ && fd == connection_->fd()) {
        on_connection(events[i].events);
      } else if (const auto it = child_fds_.find(fd); it != child_fds_.end()) {
        on_child_fd(it->second, events[i].events);
      } else if (attachments_.contains(fd)) {
        on_attachment(fd, events[i].events);
      } else if (const auto in = process_stdin_fds_.find(fd); in != process_stdin_fds_.end()) {
        feed_process_stdin(processes_.at(in->second));
      }
    }
    if (exit_code_) break;
    update_output_interest();
    update_connection_interest();
    update_egress_interest();
    if (deadlines_changed_) arm_child_timer();
  }
  return *exit_code_;
}

void supervisor::on_signal() {
  signalfd_siginfo info{};
  while (::read(signals_.get(), &info, sizeof info) == sizeof info) {
    const int sig = static_cast<int>(info.ssi_signo);
    if (sig == SIGCHLD) {
      reap();
    } else if (config_.standalone && main_pid_ > 0) {
      ::kill(-main_pid_, sig);  // the command decides what an interrupt means
    } else {
      finish(0);
      return;
    }
  }
}

void supervisor::reap() {
  bool orphans = false;
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    control::exit_event event;
    if (WIFEXITED(status)) {
      event.code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      event.signal = WTERMSIG(status);
      const std::uint64_t kills = read_oom_kill_count(config_.oom_counter_fd);
      event.oom = kills > oom_kills_seen_;
      oom_kills_seen_ = kills;
    } else {
      continue;
    }
    if (pid == main_pid_) {
      if (event.oom) std::fprintf(stderr, "sandgate-sandbox: killed by the out-of-memory killer\n");
      finish(event.code ? *event.code : 128 + *event.signal);
      return;
    }
    const auto name = names_.find(pid);
    if (name == names_.end()) {  // an orphan, or a spawn that failed
      orphans = true;
      continue;
    }
    const auto child = children_.find(name->second);
    names_.erase(name);
    if (child == children_.end()) continue;
    event.id = child->first;
    child_ended(child->second, std::move(event));
  }
  if (orphans || !lingering_.empty()) sweep_lingering();
}

void supervisor::send_event(json message) {
  if (connection_) {
    connection_->send(message);
    if (connection_->broken()) drop_connection();
    return;
  }
  if (undelivered_.size() == max_queued_events) undelivered_.pop_front();
  undelivered_.push_back(std::move(message));
}

void supervisor::on_accept() {
  unique_fd fd(::accept4(config_.listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  if (!fd) return;
  drop_connection();  // the newest gateway connection wins
  connection_ = std::make_unique<control_connection>(std::move(fd));
  watch(connection_->fd(), EPOLLIN);
  connection_wants_out_ = false;
  control::ready_event ready;
  ready.id = config_.id;
  ready.pid = config_.host_pid;
  ready.outer_pid = config_.outer_pid;
  ready.host_uid = config_.host_uid;
  ready.host_gid = config_.host_gid;
  ready.expires_at = expires_at_;
  ready.max_execution_s = config_.max_execution_s;
  if (egress_) ready.egress_fd = egress_->fd();
  for (const auto& [id, child] : children_)
    ready.children.push_back(id);
  connection_->send(json(ready));
  while (!undelivered_.empty() && connection_ && !connection_->broken()) {
    connection_->send(undelivered_.front());
    undelivered_.pop_front();
  }
  if (connection_->broken()) drop_connection();
}

void supervisor::drop_connection() {
  if (!connection_) return;
  unwatch(connection_->fd());
  connection_.reset();
  handoffs_.clear();  // attachments the gateway did not take yet: their ends close, and they with them
  waits_.clear();     // their answers had nowhere to go
  abort_uploads();    // the gateway that wrote them is gone
}

void supervisor::on_connection(std::uint32_t events) {
  if (events & EPOLLOUT) {
    if (!connection_->flush()) return drop_connection();
  }
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
    const bool open = connection_->read_some();
    while (connection_ && !exit_code_) {
      auto message = connection_->next_message();
      if (!message) break;
      handle(*message);
    }
    if (exit_code_ || !connection_) return;
    if (!open || connection_->broken()) return drop_connection();
  }
}

void supervisor::update_egress_interest() {
  const bool wanted = egress_ && egress_->listening() && !connection_;
  if (wanted == egress_watched_) return;
  if (wanted) {
    watch(egress_->fd(), EPOLLIN);
  } else {
    unwatch(egress_->fd());
  }
  egress_watched_ = wanted;
}

// EPOLLOUT only while something waits to be sent (level-triggered).
void supervisor::update_connection_interest() {
  if (!connection_) return;
  if (connection_->broken()) return drop_connection();
  const bool wants_out = connection_->wants_write();
  if (wants_out == connection_wants_out_) return;
  epoll_event ev{};
  ev.events = EPOLLIN | (wants_out ? EPOLLOUT : 0u);
  ev.data.fd = connection_->fd();
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, connection_->fd(), &ev);
  connection_wants_out_ = wants_out;
}

}  // namespace detail

int run_supervisor(const supervisor_config& config) {
  detail::supervisor s(config);
  return s.run();
}

}  // namespace sandgate::sandboxing
