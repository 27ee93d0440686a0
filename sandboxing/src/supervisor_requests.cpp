// The supervisor's answers to the gateway's requests, and its ending.
#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "sandboxing/network.hpp"
#include "sandboxing/sys_error.hpp"
#include "supervisor_loop.hpp"

namespace sandgate::sandboxing::detail {
namespace {

struct pipe_ends {
  unique_fd read;
  unique_fd write;
};

// A pipe whose ends are close-on-exec; the supervisor's end is non-blocking,
// the child's stays blocking (O_NONBLOCK belongs to the open file, not the fd).
pipe_ends make_pipe(bool supervisor_reads) {
  int fds[2];
  check_sys(::pipe2(fds, O_CLOEXEC), "pipe2(O_CLOEXEC)");
  pipe_ends p{unique_fd(fds[0]), unique_fd(fds[1])};
  const int mine = supervisor_reads ? p.read.get() : p.write.get();
  check_sys(::fcntl(mine, F_SETFL, O_NONBLOCK), "fcntl(pipe, F_SETFL, O_NONBLOCK)");
  return p;
}

}  // namespace

void supervisor::handle(const json& message) {
  pages_released_ = false;  // what this request runs is let go again once things are quiet
  control::reply result;
  result.req = message.value("req", std::uint64_t{0});
  const std::string op = message.value("op", std::string());
  try {
    if (op == "spawn") {
      result = do_spawn(message);
    } else if (op == "signal") {
      result = do_signal(message);
    } else if (op == "kill") {
      result = do_kill(message);
    } else if (op == "extend") {
      result = do_extend(message);
    } else if (op == "open_egress") {
      result = do_open_egress(message);
    } else if (op == "attach") {
      result = do_attach(message);
    } else if (op == "release_fd") {
      result = do_release_fd(message);
    } else if (op == "processes") {
      result = do_processes(message);
    } else if (op == "wait") {
      auto answer = do_wait(message);
      if (!answer) return;  // answered when the process ends, or at the wait's timeout
      result = std::move(*answer);
    } else if (op == "write_stdin") {
      result = do_write_stdin(message);
    } else if (op == "resize") {
      result = do_resize(message);
    } else if (op == "forget") {
      result = do_forget(message);
    } else if (op.starts_with("file_")) {
      result = do_file(message);
    } else if (op == "listening_ports") {
      result.ok = true;
      result.data = {{"ports", listening_ports()}};
    } else if (op == "ping") {
      result.ok = true;
    } else if (op == "shutdown") {
      result.ok = true;
      if (connection_) connection_->send(json(result));
      finish(0);
      return;
    } else {
      result.error = "unknown op \"" + op + "\"";
    }
  } catch (const std::exception& e) {
    result.ok = false;
    result.error = e.what();
  }
  // A broken connection is dropped once every request already read is
  // carried out (a gateway may send "shutdown" and close at once).
  if (connection_) connection_->send(json(result));
}

control::reply supervisor::do_spawn(const json& message) {
  const auto request = message.get<control::spawn_request>();
  control::reply result;
  result.req = request.req;
  std::size_t stdin_pending = request.stdin_data ? request.stdin_data->size() : 0;
  for (const auto& [id, child] : children_)
    stdin_pending += child.stdin_data.size() - child.stdin_written;
  if (request.id.empty()) {
    result.error = "spawn: id must not be empty";
  } else if (children_.contains(request.id)) {
    result.error = "spawn: a child named \"" + request.id + "\" is running";
  } else if (children_.size() >= max_children) {
    result.error = "spawn: too many children";
  } else if (request.argv.empty()) {
    result.error = "spawn: argv must not be empty";
  } else if (request.timeout_ms && *request.timeout_ms > max_timeout_ms) {
    result.error = "spawn: timeout_ms is more than a year";
  } else if (stdin_pending > max_pending_stdin_bytes) {
    result.error = "spawn: too much stdin waiting to be read by the children";
  } else if (request.streams && (request.capture || request.stdin_data || !request.log.empty())) {
    result.error = "spawn: streams go with neither capture, stdin nor log";
  } else if (request.streams && processes_.contains(request.id)) {
    result.error = "spawn: a process named \"" + request.id + "\" exists";
  } else if (request.streams && ring_bytes() + 2 * request.streams->buffer_bytes > max_ring_bytes_total) {
    result.error = "spawn: the processes' buffers would pass 256 MiB";
  } else {
    spawn_spec spec;
    spec.argv = request.argv;
    spec.env = config_.base_env;
    for (const auto& [key, value] : egress_env_)
      spec.env.emplace(key, value);  // the policy's env.set wins, as at a start with egress
    for (const auto& [key, value] : request.env)
      spec.env[key] = value;
    spec.cwd = request.cwd.empty() ? "/workspace" : request.cwd;
    spec.log = request.log;
    pipe_ends out, err, in;
    supervised_child started;
    std::optional<stream_process> process;
    std::vector<unique_fd> child_ends;  // the child's copies, closed here once it runs
    if (request.streams) {
      process.emplace(request.streams->buffer_bytes);
      process->options = *request.streams;
      if (process->options.pty) process->options.stdin = true;  // a terminal takes input
      make_process_streams(request, spec, started, *process, child_ends);
    }
    if (request.capture) {
      out = make_pipe(true);
      err = make_pipe(true);
      spec.stdout_fd = out.write.get();
      spec.stderr_fd = err.write.get();
    }
    if (request.stdin_data) {
      in = make_pipe(false);
      spec.stdin_fd = in.read.get();
    }
    child_cgroups::leaf leaf;
    if (cgroups_.enabled()) {
      leaf = cgroups_.create(next_cgroup_serial_++);
      spec.cgroup_procs_fd = leaf.procs.get();
      spec.cgroup_dir_fd = leaf.dir.get();
    }
    pid_t pid = 0;
    try {
      pid = spawn_confined(spec, config_.confine);
    } catch (...) {
      cgroups_.remove(leaf.name);
      throw;
    }
    child_ends.clear();
    supervised_child& c = children_[request.id];
    c.id = request.id;
    c.pid = pid;
    c.sid = pid;
    c.cgroup = leaf.name;
    c.capture = request.capture;
    c.output_limit_bytes = request.output_limit_bytes;
    c.streams[0].fd = request.streams ? std::move(started.streams[0].fd) : std::move(out.read);
    c.streams[1].fd = request.streams ? std::move(started.streams[1].fd) : std::move(err.read);
    c.stdin_fd = std::move(in.write);
    if (process) {
      c.streamed = true;
      process->id = request.id;
      process->pid = pid;
      process->argv = request.argv;
      process->cwd = spec.cwd;
      process->started_ms = wall_clock_ms();
      stream_process& p = processes_.emplace(request.id, std::move(*process)).first->second;
      if (p.stdin_fd) process_stdin_fds_[p.stdin_fd.get()] = p.id;
      result.data = process_record(p);
    }
    if (request.stdin_data) c.stdin_data = *request.stdin_data;
    if (request.timeout_ms) {
      c.timeout_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(*request.timeout_ms);
      deadlines_changed_ = true;
    }
    names_[pid] = request.id;
    start_child_io(c);
    result.ok = true;
    result.pid = pid;
  }
  return result;
}

control::reply supervisor::do_signal(const json& message) {
  const auto request = message.get<control::signal_request>();
  control::reply result;
  result.req = request.req;
  const auto child = children_.find(request.id);
  const pid_t pid = child == children_.end() ? 0 : child->second.pid;
  if (request.signal < 1 || request.signal >= NSIG) {
    result.error = "signal: " + std::to_string(request.signal) + " is not a signal number";
  } else if (pid == 0 && processes_.contains(request.id)) {
    result.error = "signal: the process \"" + request.id + "\" has ended";
  } else if (pid == 0) {
    result.error = "signal: no running child named \"" + request.id + "\"";
  } else if (::kill(request.group ? -pid : pid, request.signal) == -1 && errno != ESRCH) {
    result.error = "kill(" + std::to_string(request.group ? -pid : pid) + ", " +
                   std::to_string(request.signal) + "): " + std::generic_category().message(errno);
  } else {
    result.ok = true;
  }
  return result;
}

control::reply supervisor::do_kill(const json& message) {
  const auto request = message.get<control::kill_request>();
  control::reply result;
  result.req = request.req;
  result.ok = true;  // also when it already ended: the caller wants it gone, and it is
  if (const auto child = children_.find(request.id); child != children_.end()) {
    kill_tree(child->second);
  }
  for (const auto& [id, cgroup] : lingering_) {
    if (id == request.id) cgroups_.kill(cgroup);
  }
  return result;
}

control::reply supervisor::do_extend(const json& message) {
  const auto request = message.get<control::extend_request>();
  control::reply result;
  result.req = request.req;
  const std::int64_t now = ::time(nullptr);
  if (request.expires_at <= 0) {
    result.error = "extend: expires_at must be a positive unix time";
    return result;
  }
  if (request.expires_at > now + max_deadline_ahead_s) {
    result.error = "extend: expires_at is more than a year ahead";
    return result;
  }
  // The outer process's backstop first: it must never kill a sandbox whose
  // TTL was moved later.
  if (config_.outer_fd >= 0) {
    char text[deadline_message_bytes];
    text[0] = 'T';
    std::memcpy(text + 1, &request.expires_at, sizeof request.expires_at);
    if (::send(config_.outer_fd, text, sizeof text, MSG_NOSIGNAL | MSG_DONTWAIT) != sizeof text) {
      result.error =
          std::string("extend: send(outer process, deadline): ") + std::generic_category().message(errno);
      return result;
    }
  }
  set_ttl(request.expires_at);
  result.ok = true;
  return result;
}

control::reply supervisor::do_open_egress(const json& message) {
  control::reply result;
  result.req = message.value("req", std::uint64_t{0});
  if (!egress_) {
    result.error = "open_egress: 127.0.0.1:" + std::to_string(egress_proxy_port) +
                   " could not be kept for egress when the sandbox started";
    return result;
  }
  if (!egress_->listening()) {
    setup_network(network_mode::loopback);  // lo is down in a sandbox started with "none"
    egress_->listen();
    egress_env_ = egress_proxy_env();
  }
  result.ok = true;
  return result;
}

void supervisor::finish(int code, const char* why) {
  ::kill(-1, SIGKILL);  // from pid 1: every other process of the sandbox
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) break;
    const auto name = names_.find(pid);
    if (name == names_.end()) continue;
    const auto child = children_.find(name->second);
    names_.erase(name);
    if (child == children_.end()) continue;
    control::exit_event event;
    event.id = child->first;
    if (WIFEXITED(status)) {
      event.code = WEXITSTATUS(status);
    } else {
      event.signal = WTERMSIG(status);
    }
    event.sandbox_ended = why;
    child->second.pid = 0;
    child->second.ended = std::move(event);
  }
  // Every process is gone, so every pipe ends after what is buffered in it.
  while (!children_.empty()) {
    supervised_child& c = children_.begin()->second;
    for (int stream = 0; stream < 2; ++stream)
      read_output(c, stream, 0);
    if (!c.ended) c.ended = control::exit_event{c.id, std::nullopt, SIGKILL, false, false, false, why};
    report_exit(c);
  }
  if (connection_) connection_->drain(1000);
  exit_code_ = code;
}

}  // namespace sandgate::sandboxing::detail
