// The process API in the supervisor (control_protocol.hpp, "Processes"): a
// process's output goes to rings, which attachments (process_stream.hpp)
// read from their own offsets; its stdin comes from attachments or from
// write_stdin; its record outlives it until forgotten or among the oldest.
// While no attachment holds a stream back, its ring drops its oldest bytes
// and the process never waits; with attachments, the slowest one may be at
// most a ring behind, and the process waits on its full pipe beyond that.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>

#include "sandboxing/base64.hpp"
#include "sandboxing/sys_error.hpp"
#include "supervisor_loop.hpp"

namespace sandgate::sandboxing::detail {
namespace {

namespace ps = process_stream;

constexpr std::size_t read_chunk_bytes = 256u << 10;  // a read of a process's pipe, a frame at most
constexpr int pipe_bytes = 1 << 20;                   // a process's output pipes (fewer wake-ups both sides)
constexpr int attachment_buffer_bytes = 1 << 20;      // the supervisor's send buffer of an attachment
constexpr std::uint64_t default_wait_ms = 30'000;
constexpr std::uint64_t max_wait_ms = 24ull * 3600 * 1000;

json exit_json(const control::exit_event& e) {
  json out = {{"oom", e.oom}, {"timed_out", e.timed_out}};
  out["code"] = e.code ? json(*e.code) : json(nullptr);
  out["signal"] = e.signal ? json(*e.signal) : json(nullptr);
  return out;
}

json stream_json(const output_ring& r) {
  return {{"bytes", r.end()}, {"held", r.size()}, {"dropped", r.begin()}};
}

void set_window(int fd, std::uint16_t cols, std::uint16_t rows) {
  winsize size{};
  size.ws_col = cols;
  size.ws_row = rows;
  check_sys(::ioctl(fd, TIOCSWINSZ, &size), "ioctl(pty, TIOCSWINSZ)");
}

}  // namespace

std::int64_t wall_clock_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::uint64_t supervisor::ring_bytes() const {
  std::uint64_t total = 0;
  for (const auto& [id, p] : processes_)
    total += p.rings[0].capacity() + p.rings[1].capacity();
  return total;
}

void supervisor::make_process_streams(const control::spawn_request& request, spawn_spec& spec,
                                      supervised_child& c, stream_process& p,
                                      std::vector<unique_fd>& child_ends) {
  const auto& options = *request.streams;
  if (options.pty) {
    unique_fd master(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (!master) throw sys_error("posix_openpt(O_RDWR|O_NOCTTY)", errno);
    check_sys(::unlockpt(master.get()), "unlockpt(pty)");
    char name[128];
    if (const int rc = ::ptsname_r(master.get(), name, sizeof name); rc != 0)
      throw sys_error("ptsname_r", rc);
    unique_fd slave(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (!slave) throw sys_error(std::string("open(") + name + ")", errno);
    // The sandbox user's terminal: programs that open /dev/tty again (less, vim, a password prompt) may.
    (void)!::fchown(slave.get(), config_.confine.uid, config_.confine.gid);
    (void)!::fchmod(slave.get(), 0620);
    set_window(master.get(), options.pty->first, options.pty->second);
    check_sys(::fcntl(master.get(), F_SETFL, O_NONBLOCK), "fcntl(pty, F_SETFL, O_NONBLOCK)");
    spec.tty_fd = spec.stdin_fd = spec.stdout_fd = spec.stderr_fd = slave.get();
    p.stdin_fd.reset(::fcntl(master.get(), F_DUPFD_CLOEXEC, 3));
    if (!p.stdin_fd) throw sys_error("fcntl(pty, F_DUPFD_CLOEXEC)", errno);
    c.streams[0].fd = std::move(master);
    child_ends.push_back(std::move(slave));
    return;
  }
  int out[2];
  int err[2];
  check_sys(::pipe2(out, O_CLOEXEC), "pipe2(stdout)");
  unique_fd out_read(out[0]), out_write(out[1]);
  check_sys(::pipe2(err, O_CLOEXEC), "pipe2(stderr)");
  unique_fd err_read(err[0]), err_write(err[1]);
  check_sys(::fcntl(out_read.get(), F_SETFL, O_NONBLOCK), "fcntl(stdout pipe, F_SETFL, O_NONBLOCK)");
  (void)::fcntl(out_read.get(), F_SETPIPE_SZ, pipe_bytes);  // a smaller one where the system allows no more
  (void)::fcntl(err_read.get(), F_SETPIPE_SZ, pipe_bytes);
  check_sys(::fcntl(err_read.get(), F_SETFL, O_NONBLOCK), "fcntl(stderr pipe, F_SETFL, O_NONBLOCK)");
  spec.stdout_fd = out_write.get();
  spec.stderr_fd = err_write.get();
  if (options.stdin) {
    int in[2];
    check_sys(::pipe2(in, O_CLOEXEC), "pipe2(stdin)");
    unique_fd in_read(in[0]);
    p.stdin_fd.reset(in[1]);
    check_sys(::fcntl(p.stdin_fd.get(), F_SETFL, O_NONBLOCK), "fcntl(stdin pipe, F_SETFL, O_NONBLOCK)");
    spec.stdin_fd = in_read.get();
    child_ends.push_back(std::move(in_read));
  }
  c.streams[0].fd = std::move(out_read);
  c.streams[1].fd = std::move(err_read);
  child_ends.push_back(std::move(out_write));
  child_ends.push_back(std::move(err_write));
}

json supervisor::process_record(const stream_process& p) const {
  json pty = nullptr;
  if (p.options.pty) pty = {{"cols", p.options.pty->first}, {"rows", p.options.pty->second}};
  return {{"id", p.id},
          {"pid", p.pid},
          {"argv", p.argv},
          {"cwd", p.cwd},
          {"pty", pty},
          {"stdin", p.options.stdin},
          {"buffer_bytes", p.options.buffer_bytes},
          {"started_ms", p.started_ms},
          {"ended_ms", p.ended_ms ? json(*p.ended_ms) : json(nullptr)},
          {"running", !p.exit},
          {"exit", p.exit ? exit_json(*p.exit) : json(nullptr)},
          {"stdout", stream_json(p.rings[0])},
          {"stderr", stream_json(p.rings[1])},
          {"attachments", p.attachments.size()}};
}

stream_process& supervisor::process_of(const json& message, const char* op) {
  const std::string id = message.value("id", std::string());
  const auto it = processes_.find(id);
  if (it == processes_.end())
    throw std::invalid_argument(std::string(op) + ": no process named \"" + id + "\"");
  return it->second;
}

// --- output ---------------------------------------------------------------------------------------

std::size_t supervisor::ring_room(const stream_process& p, int stream) const {
  if (p.attachments.empty()) return std::numeric_limits<std::size_t>::max();
  const output_ring& ring = p.rings[stream];
  std::uint64_t slowest = ring.end();
  for (const int fd : p.attachments)
    slowest = std::min(slowest, std::max(attachments_.at(fd).cursor[stream], ring.begin()));
  const std::uint64_t unsent = ring.end() - slowest;
  return unsent >= ring.capacity() ? 0 : static_cast<std::size_t>(ring.capacity() - unsent);
}

void supervisor::read_into_ring(supervised_child& c, int stream, std::size_t budget) {
  static char buffer[read_chunk_bytes];
  captured_stream& s = c.streams[stream];
  const bool drain = budget == 0;  // the last read: the process's side is gone, or the sandbox ends
  if (drain) budget = 1u << 20;
  const auto found = processes_.find(c.id);
  stream_process* p = found == processes_.end() ? nullptr : &found->second;
  while (s.fd && budget > 0) {
    const std::size_t room = p && !drain ? ring_room(*p, stream) : sizeof buffer;
    if (room == 0) {  // the slowest attachment is a ring behind: the process waits on its pipe
      if (s.watched) unwatch(s.fd.get());
      s.watched = false;
      p->paused[stream] = true;
      break;
    }
    const ssize_t n = ::read(s.fd.get(), buffer, std::min({sizeof buffer, budget, room}));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {  // EOF, or EIO from a pty whose every slave side closed
      close_stream(c, stream);
      break;
    }
    budget -= static_cast<std::size_t>(n);
    s.read_bytes += static_cast<std::uint64_t>(n);
    if (p) p->rings[stream].append(std::string_view(buffer, static_cast<std::size_t>(n)));
  }
  if (p) pump_attachments(*p);
}

void supervisor::resume_reading(stream_process& p) {
  const auto child = children_.find(p.id);
  for (int stream = 0; stream < 2; ++stream) {
    if (!p.paused[stream] || ring_room(p, stream) == 0) continue;
    p.paused[stream] = false;
    if (child == children_.end()) continue;
    captured_stream& s = child->second.streams[stream];
    if (s.fd && !s.watched) {
      watch(s.fd.get(), EPOLLIN);
      s.watched = true;
    }
  }
}

bool supervisor::output_held_back(const supervised_child& c) const {
  const auto found = processes_.find(c.id);
  return found != processes_.end() && (found->second.paused[0] || found->second.paused[1]);
}

void supervisor::process_ended(const supervised_child& c, const control::exit_event& event) {
  const auto found = processes_.find(c.id);
  if (found == processes_.end()) return;
  stream_process& p = found->second;
  p.exit = event;
  p.ended_ms = wall_clock_ms();
  close_process_stdin(p);
  answer_waits(p.id, false);
  pump_attachments(p);
  trim_ended_processes();
}

void supervisor::trim_ended_processes() {
  std::vector<std::pair<std::int64_t, std::string>> ended;
  for (const auto& [id, p] : processes_)
    if (p.exit) ended.emplace_back(*p.ended_ms, id);
  if (ended.size() <= max_ended_processes) return;
  std::sort(ended.begin(), ended.end());
  for (std::size_t i = 0; i + max_ended_processes < ended.size(); ++i)
    forget_process(ended[i].second);
}

// --- attachments ----------------------------------------------------------------------------------

control::reply supervisor::do_attach(const json& message) {
  control::reply result;
  result.req = message.value("req", std::uint64_t{0});
  stream_process& p = process_of(message, "attach");
  if (p.attachments.size() >= max_attachments_per_process || attachments_.size() >= max_attachments) {
    result.error = "attach: too many attachments";
    return result;
  }
  int pair[2];
  check_sys(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair),
            "socketpair(AF_UNIX)");
  unique_fd mine(pair[0]);
  unique_fd theirs(pair[1]);
  (void)::setsockopt(mine.get(), SOL_SOCKET, SO_SNDBUF, &attachment_buffer_bytes,
                     sizeof attachment_buffer_bytes);
  const int fd = mine.get();
  attachment& a = attachments_[fd];
  a.socket = std::move(mine);
  a.process = p.id;
  json attached = {
      {"event", "attached"}, {"id", p.id}, {"pty", p.options.pty.has_value()}, {"running", !p.exit}};
  const json since = message.value("since", json::array());
  for (int stream = 0; stream < 2; ++stream) {
    const output_ring& ring = p.rings[stream];
    std::uint64_t wanted = 0;
    if (since.is_array() && since.size() > static_cast<std::size_t>(stream) &&
        since[static_cast<std::size_t>(stream)].is_number_unsigned())
      wanted = since[static_cast<std::size_t>(stream)].get<std::uint64_t>();
    a.cursor[stream] = std::clamp(wanted, ring.begin(), ring.end());
    attached[stream == 0 ? "stdout" : "stderr"] = {
        {"from", a.cursor[stream]}, {"dropped", ring.begin() > wanted ? ring.begin() - wanted : 0}};
  }
  ps::append_frame(a.out, ps::frame_kind::event, attached.dump());
  p.attachments.push_back(fd);
  watch(fd, EPOLLIN);
  a.interest = EPOLLIN;
  const int their_fd = hand_out(std::move(theirs));
  pump_attachment(fd);
  result.ok = true;
  result.data = {{"fd", their_fd}};
  return result;
}

control::reply supervisor::do_release_fd(const json& message) {
  control::reply result;
  result.req = message.value("req", std::uint64_t{0});
  handoffs_.erase(message.value("fd", -1));
  result.ok = true;
  return result;
}

void supervisor::set_interest(attachment& a, std::uint32_t interest) {
  if (interest == a.interest) return;
  epoll_event ev{};
  ev.events = interest;
  ev.data.fd = a.socket.get();
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, a.socket.get(), &ev);
  a.interest = interest;
}

void supervisor::refill(attachment& a, const stream_process& p) {
  for (int stream = 0; stream < 2 && a.out.size() < attachment_out_bytes; ++stream) {
    const output_ring& ring = p.rings[stream];
    a.cursor[stream] = std::max(a.cursor[stream], ring.begin());  // what a final drain let go
    while (a.cursor[stream] < ring.end() && a.out.size() < attachment_out_bytes) {
      const auto piece = ring.from(a.cursor[stream]).first;
      const std::size_t n = std::min({piece.size(), read_chunk_bytes, attachment_out_bytes - a.out.size()});
      ps::append_frame(a.out, stream == 0 ? ps::frame_kind::stdout_data : ps::frame_kind::stderr_data,
                       piece.substr(0, n));
      a.cursor[stream] += n;
    }
  }
  if (a.out.empty() && p.exit && !a.exit_sent) {
    json done = exit_json(*p.exit);
    done["event"] = "exit";
    done["stdout_bytes"] = p.rings[0].end();
    done["stderr_bytes"] = p.rings[1].end();
    ps::append_frame(a.out, ps::frame_kind::event, done.dump());
    a.exit_sent = true;
  }
}

std::optional<supervisor::attachment_of> supervisor::attached_at(int fd) {
  const auto it = attachments_.find(fd);
  if (it == attachments_.end()) return std::nullopt;
  const auto found = processes_.find(it->second.process);
  if (found == processes_.end()) {
    close_attachment(fd);
    return std::nullopt;
  }
  return attachment_of{it->second, found->second};
}

void supervisor::pump_attachment(int fd) {
  const auto at = attached_at(fd);
  if (!at) return;
  attachment& a = at->a;
  stream_process& p = at->p;
  bool moved = false;
  for (;;) {
    if (a.out_sent == a.out.size()) {
      a.out.clear();
      a.out_sent = 0;
      if (a.exit_sent) return close_attachment(fd);  // all of it went out: the end is the peer's EOF
      refill(a, p);
      if (a.out.empty()) break;
      moved = true;
    }
    const ssize_t n =
        ::send(fd, a.out.data() + a.out_sent, a.out.size() - a.out_sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      a.out_sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      set_interest(a, a.interest | EPOLLOUT);
      if (moved) resume_reading(p);
      return;
    }
    return close_attachment(fd);  // the gateway's end is gone
  }
  set_interest(a, a.interest & ~static_cast<std::uint32_t>(EPOLLOUT));
  if (moved) resume_reading(p);
}

void supervisor::pump_attachments(stream_process& p) {
  const std::vector<int> fds = p.attachments;  // a pump may close one
  for (const int fd : fds)
    pump_attachment(fd);
}

void supervisor::close_attachment(int fd) {
  const auto it = attachments_.find(fd);
  if (it == attachments_.end()) return;
  const std::string id = it->second.process;
  unwatch(fd);
  attachments_.erase(it);
  const auto found = processes_.find(id);
  if (found == processes_.end()) return;
  auto& list = found->second.attachments;
  list.erase(std::remove(list.begin(), list.end(), fd), list.end());
  resume_reading(found->second);  // the slowest may have been this one
}

void supervisor::on_attachment(int fd, std::uint32_t events) {
  if (events & EPOLLOUT) pump_attachment(fd);
  if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR))) return;
  static char buffer[read_chunk_bytes];
  for (;;) {
    const auto at = attached_at(fd);
    if (!at) return;
    attachment& a = at->a;
    stream_process& p = at->p;
    if (!(a.interest & EPOLLIN)) return;  // its stdin waits for the process to read
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) return close_attachment(fd);  // the gateway let go (a closed client, or its end)
    a.in.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    bool bad = false;
    while (auto frame = a.in.next(bad))
      on_attachment_frame(p, *frame);
    if (bad) return close_attachment(fd);
    if (p.stdin_pending.size() >= max_process_stdin_bytes)
      for (const int other : p.attachments)
        set_interest(attachments_.at(other),
                     attachments_.at(other).interest & ~static_cast<std::uint32_t>(EPOLLIN));
  }
}

void supervisor::on_attachment_frame(stream_process& p, process_stream::frame f) {
  std::string ignored;
  if (f.kind == ps::frame_kind::stdin_data) {
    queue_stdin(p, f.payload, false, false, ignored);
    return;
  }
  if (f.kind != ps::frame_kind::control) return;
  const json control = json::parse(f.payload, nullptr, false);
  if (!control.is_object()) return;
  const std::string op = control.value("op", std::string());
  if (op == "close_stdin") {
    queue_stdin(p, {}, true, false, ignored);
  } else if (op == "resize" && p.options.pty) {
    const auto cols = control.value("cols", 0u);
    const auto rows = control.value("rows", 0u);
    if (cols >= 1 && cols <= 10000 && rows >= 1 && rows <= 10000)
      resize(p, static_cast<std::uint16_t>(cols), static_cast<std::uint16_t>(rows));
  } else if (op == "signal" && !p.exit && p.pid > 0) {
    const int sig = control.value("signal", 0);
    if (sig >= 1 && sig < NSIG) ::kill(-p.pid, sig);
  }
}

// --- stdin ----------------------------------------------------------------------------------------

bool supervisor::queue_stdin(stream_process& p, std::string_view bytes, bool close_after, bool bounded,
                             std::string& error) {
  if (!p.options.stdin) {
    error = "the process was started without stdin";
    return false;
  }
  if (!p.stdin_fd || p.stdin_close_after) {
    error = p.exit ? "the process ended" : "the process's stdin is closed";
    return false;
  }
  if (bounded && p.stdin_pending.size() + bytes.size() > max_process_stdin_bytes) {
    error = "the process has not read the stdin queued for it yet";
    return false;
  }
  p.stdin_pending.append(bytes);
  if (close_after) {
    if (p.options.pty) {
      termios modes{};
      const char eof =
          ::tcgetattr(p.stdin_fd.get(), &modes) == 0 ? static_cast<char>(modes.c_cc[VEOF]) : '\x04';
      p.stdin_pending += eof;  // a terminal ends input with its end-of-file character
    } else {
      p.stdin_close_after = true;
    }
  }
  feed_process_stdin(p);
  return true;
}

void supervisor::feed_process_stdin(stream_process& p) {
  std::size_t written = 0;
  while (p.stdin_fd && written < p.stdin_pending.size()) {
    const ssize_t n =
        ::write(p.stdin_fd.get(), p.stdin_pending.data() + written, p.stdin_pending.size() - written);
    if (n > 0) {
      written += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    p.stdin_pending.clear();  // EPIPE, EIO: nothing reads it any more
    written = 0;
    close_process_stdin(p);
    break;
  }
  p.stdin_pending.erase(0, written);
  if (!p.stdin_fd) return;
  const bool waiting = !p.stdin_pending.empty();
  if (waiting != p.stdin_watched) {
    if (waiting) {
      watch(p.stdin_fd.get(), EPOLLOUT);
    } else {
      unwatch(p.stdin_fd.get());
    }
    p.stdin_watched = waiting;
  }
  if (!waiting && p.stdin_close_after) return close_process_stdin(p);
  if (p.stdin_pending.size() < max_process_stdin_bytes)
    for (const int fd : p.attachments) {
      attachment& a = attachments_.at(fd);
      set_interest(a, a.interest | EPOLLIN);
    }
}

void supervisor::close_process_stdin(stream_process& p) {
  if (!p.stdin_fd) return;
  if (p.stdin_watched) unwatch(p.stdin_fd.get());
  p.stdin_watched = false;
  process_stdin_fds_.erase(p.stdin_fd.get());
  p.stdin_fd.reset();
  std::string().swap(p.stdin_pending);
}

void supervisor::resize(stream_process& p, std::uint16_t cols, std::uint16_t rows) {
  if (!p.stdin_fd) return;
  set_window(p.stdin_fd.get(), cols, rows);  // the kernel tells the foreground process group (SIGWINCH)
  p.options.pty = {cols, rows};
}

// --- requests -------------------------------------------------------------------------------------

control::reply supervisor::do_processes(const json& message) {
  control::reply result;
  result.req = message.value("req", std::uint64_t{0});
  json list = json::array();
  for (const auto& [id, p] : processes_)
    list.push_back(process_record(p));
  result.ok = true;
  result.data = {{"processes", std::move(list)}};
  return result;
}

std::optional<control::reply> supervisor::do_wait(const json& message) {
  stream_process& p = process_of(message, "wait");
  const std::uint64_t req = message.value("req", std::uint64_t{0});
  if (p.exit) return control::reply{req, true, std::nullopt, "", process_record(p)};
  const auto timeout = std::min(message.value("timeout_ms", default_wait_ms), max_wait_ms);
  waits_.push_back({req, p.id, std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout)});
  deadlines_changed_ = true;
  return std::nullopt;
}

void supervisor::answer_waits(const std::string& id, bool expired_only) {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = waits_.begin(); it != waits_.end();) {
    const bool due = expired_only ? now >= it->deadline : it->id == id;
    if (!due) {
      ++it;
      continue;
    }
    control::reply r{it->req, true, std::nullopt, "", nullptr};
    if (const auto p = processes_.find(it->id); p != processes_.end()) {
      r.data = process_record(p->second);
    } else {
      r.ok = false;
      r.error = "wait: the process was forgotten";
    }
    it = waits_.erase(it);
    if (connection_) connection_->send(json(r));
    deadlines_changed_ = true;
  }
}

control::reply supervisor::do_write_stdin(const json& message) {
  control::reply result;
  result.req = message.value("req", std::uint64_t{0});
  stream_process& p = process_of(message, "write_stdin");
  const auto bytes = control::base64_decode(message.value("data", std::string()));
  if (!bytes) {
    result.error = "write_stdin: data is not base64";
    return result;
  }
  result.ok = queue_stdin(p, *bytes, message.value("close", false), true, result.error);
  if (!result.ok) result.error = "write_stdin: " + result.error;
  return result;
}

control::reply supervisor::do_resize(const json& message) {
  control::reply result;
  result.req = message.value("req", std::uint64_t{0});
  stream_process& p = process_of(message, "resize");
  const auto cols = message.value("cols", 0u);
  const auto rows = message.value("rows", 0u);
  if (!p.options.pty) {
    result.error = "resize: the process has no terminal";
  } else if (cols < 1 || cols > 10000 || rows < 1 || rows > 10000) {
    result.error = "resize: cols and rows must be 1 to 10000";
  } else if (!p.stdin_fd) {
    result.error = "resize: the process ended";
  } else {
    resize(p, static_cast<std::uint16_t>(cols), static_cast<std::uint16_t>(rows));
    result.ok = true;
  }
  return result;
}

control::reply supervisor::do_forget(const json& message) {
  control::reply result;
  result.req = message.value("req", std::uint64_t{0});
  const std::string id = process_of(message, "forget").id;
  if (const auto child = children_.find(id); child != children_.end()) kill_tree(child->second);
  forget_process(id);
  result.ok = true;
  return result;
}

void supervisor::forget_process(const std::string& id) {
  const auto found = processes_.find(id);
  if (found == processes_.end()) return;
  const std::vector<int> fds = found->second.attachments;
  for (const int fd : fds)
    close_attachment(fd);
  close_process_stdin(found->second);
  processes_.erase(found);
  answer_waits(id, false);
}

}  // namespace sandgate::sandboxing::detail
