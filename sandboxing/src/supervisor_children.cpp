// The supervisor's side of a running child: its captured output, its stdin,
// its deadlines, killing its whole tree, and the report of how it ended.
#include <dirent.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <set>
#include <vector>

#include "supervisor_loop.hpp"

namespace sandgate::sandboxing::detail {
namespace {

constexpr std::size_t output_budget_bytes = 256u << 10;  // per stream and wake-up, for fairness
constexpr std::size_t final_drain_bytes = 1u << 20;      // at most, when the pipes are given up
// While the gateway lags, a stream with at most this much left to forward
// (or past its limit) is still read: its last bytes cost little, and the rest
// is dropped, so its writer never blocks.
constexpr std::uint64_t small_remainder_bytes = 4096;

bool small_remainder(const supervised_child& c, const captured_stream& s) {
  return s.read_bytes >= c.output_limit_bytes || c.output_limit_bytes - s.read_bytes <= small_remainder_bytes;
}

// Without a cgroup: every process whose session is the child's (a setpgid
// cannot leave it; a setsid can, which only the cgroup prevents).
void kill_session(pid_t sid) {
  std::set<pid_t> killed;
  for (int round = 0; round < 100; ++round) {
    bool fresh = false;
    DIR* proc = ::opendir("/proc");
    if (proc == nullptr) return;
    while (const dirent* entry = ::readdir(proc)) {
      char* end = nullptr;
      const long pid = std::strtol(entry->d_name, &end, 10);
      if (*end != '\0' || pid <= 1 || ::getsid(static_cast<pid_t>(pid)) != sid) continue;
      ::kill(static_cast<pid_t>(pid), SIGKILL);
      fresh = killed.insert(static_cast<pid_t>(pid)).second || fresh;
    }
    ::closedir(proc);
    if (!fresh) return;
  }
}

}  // namespace

void supervisor::start_child_io(supervised_child& c) {
  for (int stream = 0; stream < 2; ++stream) {
    captured_stream& s = c.streams[stream];
    if (!s.fd) continue;
    child_fds_[s.fd.get()] = child_fd{&c, stream};
    if (!output_paused_ || small_remainder(c, s)) {
      watch(s.fd.get(), EPOLLIN);
      s.watched = true;
    }
  }
  if (c.stdin_fd) {
    child_fds_[c.stdin_fd.get()] = child_fd{&c, 2};
    watch(c.stdin_fd.get(), EPOLLOUT);
    feed_stdin(c);
  }
}

void supervisor::on_child_fd(child_fd which, std::uint32_t) {
  supervised_child& c = *which.child;
  if (which.role == 2) return feed_stdin(c);
  read_output(c, which.role, output_budget_bytes);
  if (c.ended && !c.streams_open()) report_exit(c);
}

void supervisor::read_output(supervised_child& c, int stream, std::size_t budget) {
  if (c.streamed) return read_into_ring(c, stream, budget);
  static char buffer[control::max_output_chunk_bytes];
  captured_stream& s = c.streams[stream];
  const bool drain = budget == 0;
  if (drain) budget = final_drain_bytes;
  const auto kind = static_cast<control::output_stream>(stream);
  while (s.fd && budget > 0 && (drain || !output_blocked() || small_remainder(c, s))) {
    const ssize_t n = ::read(s.fd.get(), buffer, std::min(sizeof buffer, budget));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) return close_stream(c, stream);  // EOF: every holder of the write end is gone
    const auto got = static_cast<std::uint64_t>(n);
    budget -= static_cast<std::size_t>(n);
    const std::uint64_t before = s.read_bytes;
    s.read_bytes += got;
    if (s.read_bytes > c.output_limit_bytes) c.truncated = true;
    if (before >= c.output_limit_bytes) continue;  // past the limit: read and dropped
    const auto forward = static_cast<std::size_t>(std::min(got, c.output_limit_bytes - before));
    if (!connection_) {
      c.truncated = true;  // nobody to forward it to
      continue;
    }
    connection_->send_output(c.id, kind, std::string_view(buffer, forward));
    if (connection_->broken()) {
      drop_connection();
      c.truncated = true;
    }
  }
}

void supervisor::close_stream(supervised_child& c, int stream) {
  captured_stream& s = c.streams[stream];
  if (!s.fd) return;
  if (s.watched) unwatch(s.fd.get());
  s.watched = false;
  child_fds_.erase(s.fd.get());
  s.fd.reset();
}

void supervisor::feed_stdin(supervised_child& c) {
  while (c.stdin_fd && c.stdin_written < c.stdin_data.size()) {
    const ssize_t n = ::write(c.stdin_fd.get(), c.stdin_data.data() + c.stdin_written,
                              c.stdin_data.size() - c.stdin_written);
    if (n > 0) {
      c.stdin_written += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // EPOLLOUT brings us back
    break;                                                           // EPIPE: the child closed its stdin
  }
  close_stdin(c);
}

void supervisor::close_stdin(supervised_child& c) {
  if (c.stdin_fd) {
    unwatch(c.stdin_fd.get());
    child_fds_.erase(c.stdin_fd.get());
    c.stdin_fd.reset();
  }
  std::string().swap(c.stdin_data);
  c.stdin_written = 0;
}

void supervisor::child_ended(supervised_child& c, control::exit_event status) {
  c.pid = 0;
  c.ended = std::move(status);
  close_stdin(c);
  if (c.timeout_at) {
    c.timeout_at.reset();
    deadlines_changed_ = true;
  }
  if (!c.streams_open()) return report_exit(c);
  // Descendants may still hold the pipes (a daemon keeping stdout): wait for
  // EOF, but not for ever.
  c.drain_until = std::chrono::steady_clock::now() + drain_after_exit;
  deadlines_changed_ = true;
}

void supervisor::report_exit(supervised_child& c) {
  for (int stream = 0; stream < 2; ++stream)
    close_stream(c, stream);
  close_stdin(c);
  control::exit_event event = c.ended.value_or(control::exit_event{});
  event.id = c.id;
  event.timed_out = c.timed_out;
  event.truncated = c.truncated;
  if (c.streamed) process_ended(c, event);
  send_event(json(event));
  if (!c.cgroup.empty() && !cgroups_.remove(c.cgroup)) {
    if (lingering_.size() >= max_children) {  // bounded: the oldest goes now
      cgroups_.kill(lingering_.front().second);
      lingering_.pop_front();
    }
    lingering_.emplace_back(c.id, c.cgroup);
  }
  if (c.pid != 0) names_.erase(c.pid);
  if (c.drain_until || c.timeout_at) deadlines_changed_ = true;
  const std::string id = c.id;
  children_.erase(id);
}

void supervisor::kill_tree(const supervised_child& c) {
  if (c.pid > 0) {
    ::kill(-c.pid, SIGKILL);
    ::kill(c.pid, SIGKILL);
  }
  if (cgroups_.enabled() && !c.cgroup.empty()) {
    cgroups_.kill(c.cgroup);
  } else if (c.sid > 0 && (c.pid == c.sid || !names_.contains(c.sid))) {  // not a reused pid
    kill_session(c.sid);
  }
}

void supervisor::on_child_timer() {
  std::uint64_t expirations = 0;
  (void)!::read(child_timer_.get(), &expirations, sizeof expirations);
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::string> done;
  for (auto& [id, c] : children_) {
    if (c.pid != 0 && c.timeout_at && now >= *c.timeout_at) {
      c.timeout_at.reset();
      c.timed_out = true;
      kill_tree(c);
    }
    if (c.ended && c.drain_until && now >= *c.drain_until) {
      if (c.streamed && output_held_back(c)) {
        // Its pipes are not read because an attachment is behind, not because
        // a daemon holds them: what waits in them is the attachment's, never dropped.
        c.drain_until = now + drain_after_exit;
        continue;
      }
      if (!c.tree_killed_for_drain) {
        // Whatever still holds the pipes after the child ended goes now.
        c.tree_killed_for_drain = true;
        kill_tree(c);
        c.drain_until = now + drain_after_kill;
      } else {
        done.push_back(id);
      }
    }
  }
  for (const auto& id : done) {
    supervised_child& c = children_.at(id);
    for (int stream = 0; stream < 2; ++stream)
      read_output(c, stream, 0);
    report_exit(c);
  }
  answer_waits({}, true);
  deadlines_changed_ = true;
}

void supervisor::arm_child_timer() {
  deadlines_changed_ = false;
  std::optional<steady_time> next;
  for (const auto& [id, c] : children_) {
    for (const auto& t : {c.pid != 0 ? c.timeout_at : std::nullopt, c.ended ? c.drain_until : std::nullopt}) {
      if (t && (!next || *t < *next)) next = t;
    }
  }
  for (const auto& w : waits_)
    if (!next || w.deadline < *next) next = w.deadline;
  itimerspec when{};
  if (next) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(next->time_since_epoch()).count();
    when.it_value.tv_sec = static_cast<time_t>(ns / 1000000000);
    when.it_value.tv_nsec = static_cast<long>(ns % 1000000000);
    if (when.it_value.tv_sec == 0 && when.it_value.tv_nsec == 0) when.it_value.tv_nsec = 1;
  }
  ::timerfd_settime(child_timer_.get(), TFD_TIMER_ABSTIME, &when, nullptr);
}

bool supervisor::output_blocked() const {
  return connection_ && connection_->pending_bytes() > output_high_water_bytes;
}

// Back-pressure: while the gateway is behind, captured pipes with more than
// a little left to forward leave the epoll set (so a hung-up pipe cannot spin
// the loop) and their writers block; the others keep being drained.
void supervisor::update_output_interest() {
  const bool pause = output_blocked();
  if (pause == output_paused_) return;
  output_paused_ = pause;
  for (auto& [fd, which] : child_fds_) {
    if (which.role == 2 || which.child->streamed) continue;  // a process's rings pace its own reads
    captured_stream& s = which.child->streams[which.role];
    if (pause && s.watched && !small_remainder(*which.child, s)) {
      unwatch(fd);
      s.watched = false;
    } else if (!pause && !s.watched) {
      watch(fd, EPOLLIN);
      s.watched = true;
    }
  }
}

void supervisor::sweep_lingering() {
  for (auto it = lingering_.begin(); it != lingering_.end();) {
    it = cgroups_.remove(it->second) ? lingering_.erase(it) : std::next(it);
  }
}

}  // namespace sandgate::sandboxing::detail
