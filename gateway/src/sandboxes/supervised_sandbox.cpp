#include "supervised_sandbox.hpp"

#include "../util/metrics.hpp"

#include "child_processes.hpp"
#include "egress_socket.hpp"
#include "sandbox_socket.hpp"

#include <gateway/log.hpp>
#include <sandboxing/base64.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <system_error>

namespace sandgate::gateway {
namespace {

// True when `pid` is pid 1 of a pid namespace of its own, child of `outer_pid`.
bool is_sandbox_init(int pid, int outer_pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  bool parent = false, init = false;
  while (std::getline(status, line)) {
    if (line.starts_with("PPid:")) parent = std::stoi(line.substr(5)) == outer_pid && outer_pid > 0;
    if (line.starts_with("NSpid:")) init = line.size() > 2 && line.ends_with("\t1");
  }
  return parent && init;
}

}  // namespace

namespace ctl = sandboxing::control;
using json = nlohmann::json;

supervised_sandbox::supervised_sandbox(boost::asio::io_context& io, supervisor_options opts)
    : io_(io), opts_(std::move(opts)), socket_(io), timer_(io) {}

supervised_sandbox::~supervised_sandbox() {
  exits_.clear();  // nobody is left to tell
  destroy("ended");
}

void supervised_sandbox::start() {
  std::filesystem::create_directories(opts_.run_dir);
  std::filesystem::permissions(opts_.run_dir, std::filesystem::perms::owner_all);
  // The sandbox user writes in its run dir: a small tmpfs of its own keeps
  // that off the disk that holds the gateway's state.
  const std::string mount_opts = "size=" + std::to_string(opts_.run_dir_bytes) + ",mode=0700";
  if (::mount("sandgate-run", opts_.run_dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              mount_opts.c_str()) == 0)
    run_dir_mounted_ = true;
  else
    log::warn("run_dir_not_size_limited",
              {{"sandbox_id", opts_.id}, {"error", std::generic_category().message(errno)}});
  std::filesystem::create_directories(opts_.control_path.parent_path());
  spawn_spec spec;
  spec.argv = {opts_.program.string(),
               "--policy",
               opts_.policy_file.string(),
               "--id",
               opts_.id,
               "--run-dir",
               opts_.run_dir.string(),
               "--control",
               opts_.control_path.string(),
               "--host-id-slot",
               std::to_string(opts_.host_id_slot)};
  if (opts_.host_id_lock_fd >= 0) {
    spec.inherit_fds = {opts_.host_id_lock_fd};
    spec.argv.insert(spec.argv.end(), {"--host-id-lock-fd", "3"});
  }
  spec.env = {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}, {"LANG", "C.UTF-8"}};
  spec.log_path = opts_.log_path.string();
  std::string error;
  outer_pid_ = spawn_child(spec, error);
  if (outer_pid_ < 0) throw std::runtime_error(error);
  std::weak_ptr<supervised_sandbox> weak = weak_from_this();
  watch_child(outer_pid_, [weak, id = opts_.id](int status) {
    log::info("sandbox_exited", {{"sandbox_id", id}, {"wait_status", std::to_string(status)}});
    if (auto self = weak.lock()) {
      self->outer_pid_ = -1;
      // Who owns the sandbox hears first, so that its processes' exits are
      // taken as an end, not as crashes to restart from.
      if (auto handler = std::move(self->on_end_); handler && !self->destroyed_) handler("the sandbox ended");
      self->fail_all("the sandbox ended");
    }
  });
  connect_deadline_ = std::chrono::steady_clock::now() + opts_.ready_timeout;
  try_connect();
}

void supervised_sandbox::attach(int expected_root_pid) {
  attached_ = true;
  expected_root_pid_ = expected_root_pid;
  run_dir_mounted_ = true;  // by the gateway that started it; destroy() unmounts it
  connect_deadline_ = std::chrono::steady_clock::now();
  try_connect();
}

void supervised_sandbox::try_connect() {
  if (destroyed_) return;
  boost::system::error_code ec;
  socket_.close(ec);
  socket_.connect(boost::asio::local::stream_protocol::endpoint(opts_.control_path.string()), ec);
  if (!ec) return do_read();
  if (attached_) return fail_all("no supervisor answers on its control socket (" + ec.message() + ")");
  if (std::chrono::steady_clock::now() > connect_deadline_ || outer_pid_ < 0)
    return fail_all("the sandbox supervisor did not open its control socket (see " + opts_.log_path.string() +
                    ")");
  timer_.expires_after(std::chrono::milliseconds(5));
  timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& e) {
    if (auto self = weak.lock(); self && !e) self->try_connect();
  });
}

void supervised_sandbox::do_read() {
  socket_.async_read_some(
      boost::asio::buffer(read_buf_),
      [weak = weak_from_this()](const boost::system::error_code& ec, std::size_t n) {
        auto self = weak.lock();
        if (!self || self->destroyed_) return;
        if (ec) return self->fail_all("the sandbox supervisor closed its control socket");
        self->decoder_.feed({self->read_buf_.data(), n});
        std::error_code fec;
        while (auto frame = self->decoder_.next(fec)) {
          try {
            self->on_frame(*frame);
          } catch (const std::exception& e) {  // a frame of another shape than the protocol's
            return self->fail_all(std::string("bad frame from the sandbox supervisor: ") + e.what());
          }
        }
        if (fec) return self->fail_all("bad frame from the sandbox supervisor: " + fec.message());
        self->do_read();
      });
}

void supervised_sandbox::on_frame(const json& frame) {
  const std::string event = frame.value("event", "");
  if (event == "ready") {
    const auto ready = frame.get<ctl::ready_event>();
    if (ready.id != opts_.id || (expected_root_pid_ > 0 && ready.pid != expected_root_pid_))
      return fail_all("the control socket answers for another supervisor (sandbox " + ready.id + ", pid " +
                      std::to_string(ready.pid) + ")");
    host_uid_ = ready.host_uid;
    host_gid_ = ready.host_gid;
    root_pid_ = ready.pid;
    // A pidfd of the supervisor, kept for reaching into its namespaces: opened
    // first, then checked to be pid 1 of its own pid namespace and the child
    // of the outer process named (a pid reused meanwhile would be neither).
    root_pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, root_pid_, 0)));
    if (root_pidfd_ && !is_sandbox_init(root_pid_, ready.outer_pid)) root_pidfd_.reset();
    egress_fd_ = ready.egress_fd;
    expires_at_ = ready.expires_at;
    ready_ = true;
    ready_children_ = std::set<std::string>(ready.children.begin(), ready.children.end());
    log::info(attached_ ? "sandbox_reattached" : "sandbox_ready",
              {{"sandbox_id", opts_.id}, {"pid", std::to_string(ready.pid)}});
    settle_reclaims();  // before any later frame: exits of reclaimed processes must find their handler
    for (const auto& path : files_to_give_)
      give_file(path);
    files_to_give_.clear();
    for (auto& f : before_ready_) {
      write_queue_.push_back(ctl::encode_frame(f));
      if (write_queue_.size() == 1) do_write();
    }
    before_ready_.clear();
  } else if (event == "output") {
    auto it = outputs_.find(frame.value("id", ""));
    if (it == outputs_.end() || !it->second) return;
    const auto data = ctl::base64_decode(frame.value("data", ""));
    if (!data) return;
    it->second(frame.value("stream", "") == "stderr", *data);
  } else if (event == "exit") {
    const auto ev = frame.get<ctl::exit_event>();
    outputs_.erase(ev.id);
    auto it = exits_.find(ev.id);
    if (it == exits_.end()) return;
    exit_status st;
    st.code = ev.code.value_or(-1);
    st.signal = ev.signal.value_or(0);
    st.oom = ev.oom;
    if (st.oom) ++gateway_metrics().oom_kills;
    st.timed_out = frame.value("timed_out", false);
    st.truncated = frame.value("truncated", false);
    st.sandbox_ended = ev.sandbox_ended;
    auto handler = std::move(it->second);
    exits_.erase(it);
    handler(st);
  } else if (frame.contains("req")) {
    const auto r = frame.get<ctl::reply>();
    auto it = replies_.find(r.req);
    if (it == replies_.end()) return;
    auto handler = std::move(it->second);
    replies_.erase(it);
    if (handler) handler(r);
  }
}

void supervised_sandbox::send(json frame, std::function<void(const ctl::reply&)> on_reply) {
  const auto req = next_req_++;
  frame["req"] = req;
  if (lost_ || destroyed_) {
    if (on_reply)
      boost::asio::post(io_, [on_reply = std::move(on_reply), req] {
        on_reply(ctl::reply{req, false, std::nullopt, "the sandbox has ended"});
      });
    return;
  }
  replies_[req] = std::move(on_reply);
  if (!ready_) {
    before_ready_.push_back(std::move(frame));
    return;
  }
  write_queue_.push_back(ctl::encode_frame(frame));
  if (write_queue_.size() == 1) do_write();
}

void supervised_sandbox::do_write() {
  // The handler holds the sandbox: a destroyed one still sends what it
  // queued (its last frame is the shutdown).
  boost::asio::async_write(socket_, boost::asio::buffer(write_queue_.front()),
                           [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
                             if (ec) {
                               if (!self->destroyed_)
                                 self->fail_all("cannot write to the sandbox supervisor");
                               return;
                             }
                             self->write_queue_.pop_front();
                             if (!self->write_queue_.empty()) self->do_write();
                           });
}

void supervised_sandbox::spawn(const spawn_request& req, spawn_handler on_spawned, exit_handler on_exit,
                               output_handler on_output) {
  ctl::spawn_request s;
  s.id = req.name;
  s.argv = req.argv;
  s.env = req.env;
  s.cwd = req.cwd;
  json frame;
  if (req.capture) {
    frame = json(s);
    frame["capture"] = true;
    frame["output_limit"] = req.output_limit;
    if (!req.stdin_data.empty()) frame["stdin"] = ctl::base64_encode(req.stdin_data);
    outputs_[req.name] = std::move(on_output);
  } else {
    s.log = "/run/sandgate/" + req.name + ".log";
    frame = json(s);
  }
  if (req.timeout) frame["timeout_ms"] = req.timeout->count();
  exits_[req.name] = std::move(on_exit);
  send(std::move(frame),
       [weak = weak_from_this(), name = req.name, on_spawned = std::move(on_spawned)](const ctl::reply& r) {
         if (!r.ok)
           if (auto self = weak.lock()) {
             self->exits_.erase(name);
             self->outputs_.erase(name);
           }
         on_spawned(r.ok ? "" : r.error);
       });
}

void supervised_sandbox::reclaim(const std::string& name, spawn_handler on_found, exit_handler on_exit) {
  reclaims_.push_back({name, std::move(on_found), std::move(on_exit)});
  if (ready_ || lost_ || destroyed_)
    boost::asio::post(io_, [weak = weak_from_this()] {
      if (auto self = weak.lock()) self->settle_reclaims();
    });
}

void supervised_sandbox::settle_reclaims() {
  auto waiting = std::move(reclaims_);
  reclaims_.clear();
  for (auto& a : waiting) {
    if (lost_ || destroyed_) {
      a.on_found("the sandbox has ended");
    } else if (!ready_children_.count(a.name)) {
      a.on_found("it was no longer running when the sandbox was re-attached");
    } else {
      exits_[a.name] = std::move(a.on_exit);
      a.on_found({});
    }
  }
}

void supervised_sandbox::when_ready(spawn_handler done) {
  send({{"op", "ping"}}, [done = std::move(done)](const ctl::reply& r) { done(r.ok ? "" : r.error); });
}

void supervised_sandbox::open_egress(spawn_handler done) {
  send({{"op", "open_egress"}}, [done = std::move(done)](const ctl::reply& r) { done(r.ok ? "" : r.error); });
}

sandboxing::unique_fd supervised_sandbox::copy_descriptor(int fd, std::string& error) {
  if (!ready_ || lost_ || destroyed_ || root_pid_ <= 0) {
    error = "the sandbox supervisor is not connected";
    return {};
  }
  // The supervisor is connected, so root_pid_ still names it (its pid was
  // checked against the one this gateway started or recorded).
  const sandboxing::unique_fd process(static_cast<int>(::syscall(SYS_pidfd_open, root_pid_, 0)));
  if (!process) {
    error = std::string("pidfd_open(supervisor): ") + std::generic_category().message(errno);
    return {};
  }
  sandboxing::unique_fd copy(static_cast<int>(::syscall(SYS_pidfd_getfd, process.get(), fd, 0)));
  if (!copy)
    error = "pidfd_getfd(supervisor, " + std::to_string(fd) + "): " + std::generic_category().message(errno);
  return copy;
}

sandboxing::unique_fd supervised_sandbox::port_socket(std::string& error) {
  if (!ready_ || lost_ || destroyed_ || !root_pidfd_) {
    error = "the sandbox supervisor is not connected";
    return {};
  }
  return socket_in_sandbox(root_pidfd_.get(), error);
}

sandboxing::unique_fd supervised_sandbox::copy_egress_listener(std::string& error) {
  if (ready_ && !lost_ && !destroyed_ && !egress_fd_) {
    error = "the sandbox could not keep 127.0.0.1:3128 for egress when it started";
    return {};
  }
  auto listener = copy_descriptor(egress_fd_.value_or(-1), error);
  if (!listener) return {};
  if (const auto why = check_egress_socket(listener.get()); !why.empty()) {
    error = "descriptor " + std::to_string(egress_fd_.value_or(-1)) + " of the supervisor: " + why;
    return {};
  }
  return listener;
}

void supervised_sandbox::kill_tree(const std::string& name) {
  send({{"op", "kill"}, {"id", name}}, nullptr);
}

void supervised_sandbox::extend(std::int64_t expires_at, spawn_handler done) {
  send({{"op", "extend"}, {"expires_at", expires_at}},
       [weak = weak_from_this(), expires_at, done = std::move(done)](const ctl::reply& r) {
         if (auto self = weak.lock(); self && r.ok) self->expires_at_ = expires_at;
         done(r.ok ? "" : r.error);
       });
}

int supervised_sandbox::open_workspace() const {
  if (!ready_ || root_pid_ <= 0) {
    errno = ESRCH;
    return -1;
  }
  // The supervisor's root is the sandbox's root; the workspace is a plain
  // directory under it, resolved without following any link.
  const std::string root = "/proc/" + std::to_string(root_pid_) + "/root";
  const int root_fd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) return -1;
  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const int fd = static_cast<int>(::syscall(SYS_openat2, root_fd, "workspace", &how, sizeof how));
  const int saved = errno;
  ::close(root_fd);
  errno = saved;
  return fd;
}

void supervised_sandbox::signal(const std::string& name, int sig) {
  ctl::signal_request s;
  s.id = name;
  s.signal = sig;
  s.group = true;
  send(json(s), nullptr);
}

void supervised_sandbox::give_file(const std::filesystem::path& host_path) {
  if (!ready_) {
    files_to_give_.push_back(host_path);
    return;
  }
  // lchown: the run dir belongs to the sandbox user, who may have swapped the file for a link.
  if (::lchown(host_path.c_str(), host_uid_, host_gid_) != 0)
    log::warn("give_file_failed", {{"sandbox_id", opts_.id}, {"path", host_path.string()}});
}

void supervised_sandbox::fail_all(const std::string& why) {
  if (destroyed_ || lost_) return;
  log::warn("sandbox_lost", {{"sandbox_id", opts_.id}, {"why", why}});
  ready_ = false;
  lost_ = true;
  before_ready_.clear();
  // A supervisor that is not this process's child is seen to end only here:
  // who owns the sandbox hears first, so that its processes' exits (and
  // failed adoptions) are taken as its end, not as crashes or losses.
  if (attached_)
    if (auto handler = std::move(on_end_); handler) handler(why);
  settle_reclaims();
  if (destroyed_) return;
  auto replies = std::move(replies_);
  replies_.clear();
  for (auto& [req, handler] : replies)
    if (handler) handler(ctl::reply{req, false, std::nullopt, why});
  // The supervisor kills everything when it ends; past the TTL, that is why.
  const auto now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  end_processes(expires_at_ > 0 && now + 2 >= expires_at_ ? "expired" : "ended");
  boost::system::error_code ec;
  socket_.close(ec);
}

void supervised_sandbox::end_processes(const std::string& sandbox_ended) {
  outputs_.clear();
  auto exits = std::move(exits_);
  exits_.clear();
  for (auto& [name, handler] : exits) {
    exit_status st;
    st.signal = SIGKILL;  // what the supervisor sends everything inside as the sandbox ends
    st.sandbox_ended = sandbox_ended;
    handler(st);
  }
}

bool supervised_sandbox::leave_running() {
  if (destroyed_) return true;
  log::info("sandbox_left_running", {{"sandbox_id", opts_.id}});
  destroyed_ = true;  // nothing more from or to it, and destroy() leaves it alone
  on_end_ = nullptr;
  outputs_.clear();
  exits_.clear();
  replies_.clear();
  reclaims_.clear();
  boost::system::error_code ec;
  timer_.cancel();
  socket_.close(ec);
  return true;
}

void supervised_sandbox::destroy(const std::string& why) {
  if (destroyed_) return;
  const bool tell = ready_ && !lost_;
  destroyed_ = true;
  on_end_ = nullptr;
  auto self_while_ending = weak_from_this().lock();  // a handler may drop the last other reference
  end_processes(why);
  replies_.clear();
  reclaims_.clear();
  before_ready_.clear();
  boost::system::error_code ec;
  timer_.cancel();
  if (auto self = weak_from_this().lock(); self && tell) {
    // The supervisor kills everything, removes its cgroup and exits (the
    // only way to end one an earlier gateway started). Queued after what is
    // being written, never interleaved with it; the socket stays open for
    // the supervisor to read it all, and is closed after 5 s.
    write_queue_.push_back(ctl::encode_frame({{"op", "shutdown"}, {"req", next_req_++}}));
    if (write_queue_.size() == 1) do_write();
    timer_.expires_after(std::chrono::seconds(5));
    timer_.async_wait([self](const boost::system::error_code& e) {
      boost::system::error_code ignored;
      if (!e) self->socket_.close(ignored);
    });
  } else {
    socket_.close(ec);
  }
  if (outer_pid_ > 0 && child_running(outer_pid_)) ::kill(outer_pid_, SIGTERM);
  if (run_dir_mounted_) ::umount2(opts_.run_dir.c_str(), MNT_DETACH);
  run_dir_mounted_ = false;
}

}  // namespace sandgate::gateway
