#include "kernel.hpp"

#include "../util/metrics.hpp"

#include <gateway/ids.hpp>
#include <gateway/log.hpp>
#include <jupyter_protocol/errors.hpp>
#include <jupyter_protocol/journal.hpp>
#include <jupyter_protocol/wire.hpp>

#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <utility>

namespace sandgate::gateway {
namespace fs = std::filesystem;
using protocol::channel;

namespace {

bool is_reply(const std::string& msg_type) {
  return msg_type.size() > 6 && msg_type.compare(msg_type.size() - 6, 6, "_reply") == 0;
}

std::string replace_all(std::string s, std::string_view from, const std::string& to) {
  for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
  return s;
}

}  // namespace

kernel::kernel(boost::asio::io_context& io, zmq::context_t& zmq, kernel_options opts,
               std::shared_ptr<sandbox> box)
    : io_(io),
      zmq_(zmq),
      opts_(std::move(opts)),
      box_(std::move(box)),
      session_(protocol::new_uuid4()),
      // xeus 2.4.1 kernels abort ("Invalid argument") on an ipc endpoint
      // over 31 bytes: "ipc://" + ip + "-4" with ip /run/sandgate/k + 8 hex
      // is 31. A short name, unique within the sandbox, for the kernel's
      // process, sockets and files.
      file_name_(opts_.file_name.empty() ? "k" + opts_.id.substr(opts_.id.size() - 8) : opts_.file_name),
      start_timer_(io),
      probe_timer_(io),
      stop_timer_(io),
      journal_timer_(io),
      execution_timer_(io) {
  conn_.transport = "ipc";
  conn_.ip = (box_->run_dir_inside() / file_name_).string();
  conn_.shell_port = 1;
  conn_.iopub_port = 2;
  conn_.stdin_port = 3;
  conn_.control_port = 4;
  conn_.hb_port = 5;
  conn_.key = opts_.key.empty() ? random_hex(32) : opts_.key;
  conn_.kernel_name = opts_.spec.name;
  signer_ = protocol::signer(conn_.key);
}

nlohmann::json kernel::reattach_record() const {
  return {{"name", opts_.spec.name}, {"key", conn_.key}, {"file", file_name_}};
}

kernel::~kernel() {
  close_channels();
  if (box_ && opts_.owns_sandbox && !detached_) box_->destroy();
}

// The kernel's sockets in its run dir, in the order connect_channels uses:
// shell, control, stdin, iopub (ipc://<ip>-<port>).
std::vector<std::string> kernel::socket_names() const {
  return {file_name_ + "-1", file_name_ + "-4", file_name_ + "-3", file_name_ + "-2"};
}

zmq_channel* kernel::channel_for(channel ch) {
  switch (ch) {
    case channel::shell:
      return shell_.get();
    case channel::control:
      return control_.get();
    case channel::stdin_:
      return stdin_.get();
    case channel::iopub:
      return iopub_.get();
    case channel::hb:
      return nullptr;
  }
  return nullptr;
}

void kernel::connect_channels() {
  // shell and stdin share one routing id: a kernel sends input_request to
  // the identity of the shell request's sender, as jupyter_client arranges.
  const std::string identity = session_;
  // A kernel whose iopub waits for its subscribers is read with a bounded
  // pipe, so that holding its output back (hold_output) reaches the kernel.
  const int iopub_limit = opts_.spec.iopub_backpressure ? held_iopub_messages : 0;
  auto bind = [this, &identity](std::size_t i, channel ch, zmq::socket_type type, int receive_limit) {
    std::weak_ptr<kernel> weak = weak_from_this();
    const bool shared_id = ch == channel::shell || ch == channel::stdin_;
    return zmq_channel::connect(
        io_, zmq_, type, pins_.endpoint(i),
        [weak, ch](std::vector<std::string>&& f) {
          if (auto k = weak.lock()) k->on_kernel_message(ch, std::move(f));
        },
        shared_id ? identity : std::string(), receive_limit);
  };
  shell_ = bind(0, channel::shell, zmq::socket_type::dealer, 0);
  control_ = bind(1, channel::control, zmq::socket_type::dealer, 0);
  stdin_ = bind(2, channel::stdin_, zmq::socket_type::dealer, 0);
  iopub_ = bind(3, channel::iopub, zmq::socket_type::sub, iopub_limit);
  for (const auto& input : {shell_, control_, stdin_})
    input->on_drained([weak = weak_from_this()] {
      if (auto k = weak.lock(); k && !k->input_congested()) k->input_waiters_.resume_all();
    });
  if (output_holds_ > 0 && opts_.spec.iopub_backpressure) iopub_->pause();
}

void kernel::hold_output() {
  if (++output_holds_ != 1 || !opts_.spec.iopub_backpressure) return;
  ++gateway_metrics().output_holds;
  if (iopub_) iopub_->pause();
}

void kernel::release_output() {
  if (output_holds_ == 0) return;
  if (--output_holds_ == 0 && iopub_) iopub_->resume();
}

void kernel::wait_for_sockets() {
  if (!start_done_) return;
  if (pins_.pin(box_->run_dir_host(), socket_names(), box_->owner_uid())) {
    try {
      connect_channels();
    } catch (const std::exception& e) {  // out of descriptors or sockets: fail now, not at the timeout
      close_channels();
      const std::string error = std::string("cannot connect to the kernel: ") + e.what();
      log::error("kernel_connect_failed", {{"kernel_id", id()}, {"error", e.what()}});
      return stop_process(
          [self = shared_from_this(), error](const std::string&) { self->on_started(error); });
    }
    return send_probe();
  }
  probe_timer_.expires_after(std::chrono::milliseconds(10));
  probe_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec) self->wait_for_sockets();
  });
}

void kernel::close_channels() {
  for (auto* ch : {&shell_, &control_, &stdin_, &iopub_}) {
    if (*ch) (*ch)->close();
    ch->reset();
  }
  pins_.reset();
  // What waited in the input queues went with them, as what the process
  // had not read goes with it; the clients' next messages are held for the
  // next process, or answered by its end.
  input_waiters_.resume_all();
}

bool kernel::input_congested() const {
  for (const auto* c : {shell_.get(), control_.get(), stdin_.get()})
    if (c && c->congested()) return true;
  return false;
}

void kernel::start(done_handler done) {
  phase_ = phase::starting;
  launch(std::move(done));
}

void kernel::launch(done_handler done) {
  start_done_ = std::move(done);
  state_ = "starting";
  // Only single names inside the run dir, which the sandbox user owns: no
  // path the gateway uses there goes through a directory that code in the
  // sandbox could swap for a link.
  const fs::path conn_host = box_->run_dir_host() / (file_name_ + ".json");
  const fs::path conn_inside = box_->run_dir_inside() / (file_name_ + ".json");
  try {
    protocol::write_connection_file(conn_host, conn_);
    box_->hand_over(conn_host);
    close_channels();
    probe_answered_ = iopub_seen_ = false;
    socket_pins::clear(box_->run_dir_host(), socket_names());
  } catch (const std::exception& e) {
    on_started(std::string("cannot prepare the kernel: ") + e.what());
    return;
  }
  spawn_request req;
  req.name = file_name_;
  for (const auto& a : opts_.spec.argv) {
    std::string arg = replace_all(replace_all(a, "{connection_file}", conn_inside.string()), "{resource_dir}",
                                  opts_.spec.dir.string());
    for (const auto& [host, inside] : opts_.program_dirs)  // a program the sandbox shows elsewhere
      if (arg.rfind(host + "/", 0) == 0) arg = inside + arg.substr(host.size());
    req.argv.push_back(std::move(arg));
  }
  req.env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"},
             {"LANG", "C.UTF-8"},
             {"HOME", box_->workspace_inside()},
             {"JPY_SESSION_NAME", opts_.id}};
  for (const auto& [k, v] : opts_.spec.env)
    req.env[k] = v;
  for (const auto& [k, v] : opts_.env)
    req.env[k] = v;
  if (opts_.limits.journal_bytes > 0 && opts_.spec.iopub_journal) {
    req.env[protocol::journal_path_env] = (box_->run_dir_inside() / (file_name_ + ".journal")).string();
    req.env[protocol::journal_bytes_env] = std::to_string(opts_.limits.journal_bytes);
  }
  req.cwd = box_->workspace_inside();

  const unsigned gen = ++generation_;
  auto self = shared_from_this();
  box_->spawn(
      req,
      [self](const std::string& error) {
        if (!error.empty()) return self->on_started(error);
        self->process_running_ = true;
        self->wait_for_sockets();
      },
      [self, gen](const exit_status& st) {
        if (gen == self->generation_) self->on_process_exit(st);
      });
  arm_start_timer(gen);
}

void kernel::reattach(done_handler done) {
  phase_ = phase::starting;
  start_done_ = std::move(done);
  state_ = "starting";
  probe_answered_ = iopub_seen_ = false;
  const unsigned gen = ++generation_;
  auto self = shared_from_this();
  box_->adopt(
      file_name_,
      [self](const std::string& error) {
        if (!error.empty()) return self->on_started(error);
        self->process_running_ = true;
        self->wait_for_sockets();
      },
      [self, gen](const exit_status& st) {
        if (gen == self->generation_) self->on_process_exit(st);
      });
  arm_start_timer(gen);
}

void kernel::detach() {
  if (phase_ == phase::ended) return;
  phase_ = phase::ended;
  detached_ = true;
  start_done_ = nullptr;
  stop_done_ = nullptr;
  for (auto* t : {&start_timer_, &probe_timer_, &stop_timer_, &execution_timer_})
    t->cancel();
  auto clients = std::move(clients_);
  clients_.clear();
  for (const auto& c : clients)
    c->close(1001, "the gateway is restarting; the kernel keeps running");
  close_channels();
  log::info("kernel_detached", {{"kernel_id", id()}});
}

void kernel::arm_start_timer(unsigned gen) {
  auto self = shared_from_this();
  start_timer_.expires_after(opts_.limits.start_timeout);
  start_timer_.async_wait([self, gen](const boost::system::error_code& ec) {
    if (ec || gen != self->generation_ || self->start_done_ == nullptr) return;
    log::warn("kernel_start_timeout", {{"kernel_id", self->id()}});
    self->stop_process([self](const std::string&) {
      self->on_started("the kernel did not answer kernel_info within " +
                       std::to_string(self->opts_.limits.start_timeout.count()) + " s");
    });
  });
}

void kernel::send_probe() {
  if (!start_done_) return;
  // On control as well as shell: a kernel taken over in the middle of a
  // cell answers there at once, while its shell waits for the cell. The
  // first answer counts.
  for (const auto ch : {channel::shell, channel::control}) {
    auto msg = protocol::make_message("kernel_info_request", "{}", session_);
    remember(msg.msg_id(), {{}, {}, true, {}, {}});
    send_to_kernel(ch, msg);
  }
  probe_timer_.expires_after(std::chrono::seconds(1));
  probe_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec) self->send_probe();
  });
}

void kernel::on_started(const std::string& error) {
  if (!start_done_) return;
  start_timer_.cancel();
  probe_timer_.cancel();
  auto done = std::move(start_done_);
  start_done_ = nullptr;
  if (error.empty()) {
    phase_ = phase::running;
    // A taken-over kernel whose cells were running when last stored is busy
    // from the start, not idle until its journal is read.
    state_presumed_ = !taken_up_.empty();
    state_ = state_presumed_ ? "busy" : "idle";
    if (recorded_) replay_journal();
    auto held = std::move(held_);
    held_.clear();
    for (auto& h : held)
      if (auto c = h.client.lock()) (void)from_client(c, h.ch, std::move(h.msg));  // false: c waits
    if (!input_congested()) input_waiters_.resume_all();
    log::info("kernel_ready", {{"kernel_id", id()}, {"kernel_name", name()}});
  } else {
    log::warn("kernel_start_failed", {{"kernel_id", id()}, {"error", error}});
    finish_stop();
  }
  auto waiting = std::move(when_ready_);
  when_ready_.clear();
  for (auto& w : waiting)
    w();
  done(error);
}

void kernel::remember(const std::string& msg_id, pending_request req) {
  if (msg_id.empty()) return;
  if (pending_.emplace(msg_id, std::move(req)).second) pending_order_.push_back(msg_id);
  while (pending_order_.size() > opts_.limits.max_pending_requests) {
    pending_.erase(pending_order_.front());
    pending_order_.pop_front();
  }
}

send_result kernel::send_to_kernel(channel ch, const protocol::message& msg) {
  auto* socket = channel_for(ch);
  if (!socket) return send_result::refused;
  const auto result = socket->send(protocol::encode(msg, signer_));
  if (result == send_result::refused)
    log::warn("kernel_send_dropped",
              {{"kernel_id", id()}, {"channel", protocol::to_string(ch)}, {"msg_id", msg.msg_id()}});
  return result;
}

void kernel::touch() {
  active_at_ = std::chrono::steady_clock::now();
  last_activity_ = std::chrono::system_clock::now();  // formatted only when asked for
}

void kernel::on_kernel_message(channel ch, std::vector<std::string>&& frames) {
  auto& counters = gateway_metrics();
  ++counters.messages_from_kernels;
  for (const auto& f : frames)
    counters.bytes_from_kernels += f.size();
  protocol::message msg;
  if (auto ec = protocol::decode(std::move(frames), signer_, msg)) {
    log::warn("kernel_message_rejected",
              {{"kernel_id", id()}, {"channel", protocol::to_string(ch)}, {"error", ec.message()}});
    return;
  }
  touch();
  // The execution_state of a status message, read once.
  const std::string status = ch == channel::iopub ? execution_state_of(msg) : std::string();
  // A kernel_info's busy and idle say nothing of the kernel's cells: one
  // answered on control while a cell runs reports idle. Nor does a late
  // "starting": ipykernel's control thread can answer the probe before its
  // main thread publishes that, and the kernel is ready by then.
  if ((status == "busy" || status == "idle") && phase_ == phase::running &&
      msg.parent.msg_type != "kernel_info_request") {
    state_ = status;
    state_presumed_ = false;
  }
  auto out = std::make_shared<outgoing>(ch, std::move(msg));
  const auto& sent = out->message();
  // While a taken-over kernel's journal is still to be read, iopub waits to
  // be recorded after what the journal holds; held before the start below,
  // which reads the journal, so the journal is read up to this message.
  const bool held = ch == channel::iopub && recorded_;
  if (held) {
    journal_held_bytes_ += sent.content.size();
    for (const auto& b : sent.buffers)
      journal_held_bytes_ += b.size();
    journal_held_.push_back(sent.clone());
  }
  if (ch == channel::iopub && start_done_) {
    // Ready needs iopub too: until the subscription carries messages, output would be lost.
    iopub_seen_ = true;
    if (probe_answered_) on_started({});
  }
  if (ch == channel::iopub)
    broadcast(out);
  else
    route_reply(out);
  // Recorded after it is on its way to the clients, off their round trip.
  if (!held && (ch != channel::iopub || taken_up_.empty() || !record_taken_up(sent, status)))
    record(ch, sent, status);
}

std::string kernel::execution_state_of(const protocol::message& msg) {
  if (msg.msg_type() != "status") return {};
  return protocol::string_member(msg.content, "execution_state").value_or(std::string());
}

void kernel::record(channel ch, const protocol::message& msg, std::string_view status) {
  if (executions_.on_message(ch, msg, status) && !status.empty()) track_execution(msg.parent.msg_id, status);
}

void kernel::route_reply(const std::shared_ptr<outgoing>& out) {
  const auto& m = out->message();
  auto it = pending_.find(m.parent.msg_id);
  if (it == pending_.end()) {
    log::debug("kernel_reply_unrouted", {{"kernel_id", id()}, {"msg_type", m.msg_type()}});
    return;
  }
  if (it->second.internal) {
    if (auto waiter = internal_replies_.find(m.parent.msg_id); waiter != internal_replies_.end()) {
      auto done = std::move(waiter->second);
      internal_replies_.erase(waiter);
      // No document: a kernel's status of another type than a string is "nothing".
      const auto status = protocol::string_member(m.content, "status");
      done(status == "ok" ? std::string() : "the kernel answered " + status.value_or("nothing"));
    } else if (m.msg_type() == "kernel_info_reply" && start_done_) {
      probe_answered_ = true;
      if (iopub_seen_) return on_started({});
      // The kernel answers but our subscription missed its status (it was
      // still being set up, as on a re-attach): probe again soon.
      probe_timer_.expires_after(std::chrono::milliseconds(50));
      probe_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
        if (!ec) self->send_probe();
      });
    }
  } else if (auto client = recipient(it->second)) {
    client->deliver(out);
  } else {
    buffer_for(it->second.session_id, out);
  }
  if (is_reply(m.msg_type())) pending_.erase(it);  // its id stays in pending_order_ until evicted
}

// The attached client a reply goes to: the one that sent the request, else
// another connection of the same session. A client that has detached (its
// WebSocket is closing, a last write may still be in flight) gets nothing:
// its session's replay buffer does.
std::shared_ptr<kernel_client> kernel::recipient(pending_request& req) const {
  if (auto client = req.client.lock();
      client && std::find(clients_.begin(), clients_.end(), client) != clients_.end())
    return client;
  if (req.session_id.empty()) return nullptr;
  for (const auto& c : clients_) {
    if (c->session_id() == req.session_id) {
      req.client = c;
      return c;
    }
  }
  return nullptr;
}

void kernel::broadcast(const std::shared_ptr<outgoing>& out) {
  for (const auto& c : clients_)
    c->deliver(out);
  for (auto& [session, buf] : replay_)
    buffer_for(session, out);
}

void kernel::buffer_for(const std::string& session_id, const std::shared_ptr<outgoing>& out) {
  auto it = replay_.find(session_id);
  if (it == replay_.end()) return;
  auto& buf = it->second;
  buf.bytes += out->size_bytes();
  buf.messages.push_back(out);
  while (buf.bytes > opts_.limits.replay_buffer_bytes && !buf.messages.empty()) {
    buf.bytes -= buf.messages.front()->size_bytes();
    buf.messages.pop_front();
    if (!buf.overflowed)
      log::warn("replay_buffer_overflow", {{"kernel_id", id()}, {"session_id", session_id}});
    buf.overflowed = true;
  }
}

void kernel::attach(const std::shared_ptr<kernel_client>& client) {
  clients_.push_back(client);
  const auto& session = client->session_id();
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(replay_, [now](const auto& kv) { return kv.second.expires < now; });
  if (!session.empty()) {
    if (auto it = replay_.find(session); it != replay_.end()) {
      for (const auto& out : it->second.messages)
        client->deliver(out);
      replay_.erase(it);
    }
    for (auto& [msg_id, req] : pending_)
      if (!req.internal && req.session_id == session) recipient(req);
  }
  if (phase_ == phase::running) {  // the nudge clients expect on connect, as jupyter_server does
    auto msg = protocol::make_message("kernel_info_request", "{}", session_);
    remember(msg.msg_id(), {{}, {}, true, {}, {}});
    send_to_kernel(channel::shell, msg);
  }
}

void kernel::detach(const std::shared_ptr<kernel_client>& client,
                    std::vector<std::shared_ptr<outgoing>> unsent) {
  std::erase(clients_, client);
  const auto& session = client->session_id();
  if (session.empty() || phase_ == phase::ended) return;
  if (std::any_of(clients_.begin(), clients_.end(),
                  [&](const auto& c) { return c->session_id() == session; }))
    return;
  auto& buf = replay_[session];
  buf.expires = std::chrono::steady_clock::now() + opts_.limits.replay_retention;
  for (const auto& out : unsent)
    buffer_for(session, out);
  while (replay_.size() > opts_.limits.max_replay_sessions) {
    auto oldest = std::min_element(replay_.begin(), replay_.end(), [](const auto& a, const auto& b) {
      return a.second.expires < b.second.expires;
    });
    replay_.erase(oldest);
  }
}

bool kernel::from_client(const std::shared_ptr<kernel_client>& client, channel ch, protocol::message msg) {
  if (phase_ == phase::ended || phase_ == phase::stopping || ch == channel::hb || ch == channel::iopub)
    return true;
  if (phase_ == phase::starting || phase_ == phase::restarting || phase_ == phase::created) {
    // The kernel's sockets are not there yet: hold the message until it is
    // ready, and the client's next ones in its WebSocket past a bound.
    if (held_.size() >= 2 * max_held_messages) {
      refuse(client, ch, msg, "too many messages wait for the kernel to start");
    } else {
      held_.push_back({client, ch, std::move(msg)});
    }
    if (held_.size() < max_held_messages) return true;
    input_waiters_.add(client);
    return false;
  }
  if (ch == channel::shell || ch == channel::control)
    remember(msg.msg_id(), {client, client->session_id(), false, msg.msg_type(),
                            msg.msg_type() == "execute_request" ? msg.header : std::string()});
  touch();
  if (send_to_kernel(ch, msg) == send_result::refused) {
    pending_.erase(msg.msg_id());
    refuse(client, ch, msg, "the kernel's input queue is full");
  } else if (ch == channel::shell && msg.msg_type() == "execute_request") {
    // Recorded once it is on its way: the kernel's answer can only be read
    // after this returns.
    executions_.begin(msg.msg_id(), msg.content, client->principal());
  }
  auto* socket = channel_for(ch);
  if (!socket || !socket->congested()) return true;
  // The kernel reads slower than the client writes: the client waits, in
  // its WebSocket and its TCP connection, until the queue has gone out.
  input_waiters_.add(client);
  return false;
}

void kernel::refuse(const std::shared_ptr<kernel_client>& client, channel ch, const protocol::message& msg,
                    const std::string& why) {
  ++gateway_metrics().client_messages_refused;
  log::warn("kernel_input_refused", {{"kernel_id", id()},
                                     {"channel", protocol::to_string(ch)},
                                     {"msg_id", msg.msg_id()},
                                     {"msg_type", msg.msg_type()},
                                     {"why", why}});
  for (const auto& out : refusal_answers(ch, msg, why, session_))
    client->deliver(out);
}

void kernel::execute(const std::string& code, std::optional<std::chrono::milliseconds> timeout,
                     execution_log::waiter done) {
  constexpr std::size_t max_waiting = 100;
  if ((phase_ == phase::starting || phase_ == phase::restarting) && when_ready_.size() < max_waiting) {
    when_ready_.push_back([weak = weak_from_this(), code, timeout, done] {
      if (auto self = weak.lock()) self->execute(code, timeout, done);
    });
    return;
  }
  if (phase_ != phase::running) {
    execution_record r;
    r.msg_id = protocol::new_uuid4();
    r.status = "error";
    r.error = nlohmann::json{{"ename", "KernelNotRunning"},
                             {"evalue", "the kernel is " + state_},
                             {"traceback", nlohmann::json::array()}};
    r.finished = std::chrono::steady_clock::now();
    return done(r);
  }
  const auto content = nlohmann::json{{"code", code},          {"silent", false},
                                      {"store_history", true}, {"user_expressions", nlohmann::json::object()},
                                      {"allow_stdin", false},  {"stop_on_error", false}};
  auto msg = protocol::make_message("execute_request", content.dump(), session_);
  remember(msg.msg_id(), {{}, {}, true, "execute_request", msg.header});
  touch();
  if (send_to_kernel(channel::shell, msg) == send_result::refused) {
    pending_.erase(msg.msg_id());
    execution_record r;
    r.msg_id = msg.msg_id();
    r.status = "error";
    r.error = nlohmann::json{{"ename", "GatewayInputRefused"},
                             {"evalue", "the kernel's input queue is full"},
                             {"traceback", nlohmann::json::array()}};
    r.finished = std::chrono::steady_clock::now();
    return done(r);
  }
  executions_.begin(msg.msg_id(), msg.content, {}, timeout);
  executions_.wait(msg.msg_id(), std::move(done));
}

void kernel::claim(const std::string& owner, bool owns_sandbox,
                   const std::map<std::string, std::string>& env) {
  opts_.owner = owner;
  opts_.owns_sandbox = owns_sandbox;
  for (const auto& [name, value] : env)
    opts_.env[name] = value;
}

bool kernel::can_apply_env() const {
  return opts_.spec.language == "python" || opts_.spec.language == "bash";
}

void kernel::apply_env(const std::map<std::string, std::string>& env, done_handler done) {
  if (env.empty()) return done({});
  std::string code;
  if (opts_.spec.language == "python") {
    // A JSON object of strings is a Python dict literal.
    code = "__import__('os').environ.update(" + nlohmann::json(env).dump() + ")";
  } else if (opts_.spec.language == "bash") {
    for (const auto& [name, value] : env) {  // names are identifiers (the API checks them)
      std::string quoted = "'";
      for (char ch : value)
        quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
      code += "export " + name + "=" + quoted + "'\n";
    }
  } else {
    return done("cannot set variables in a running " + opts_.spec.language + " kernel");
  }
  execute_silently(code, std::move(done));
}

void kernel::execute_silently(const std::string& code, done_handler done) {
  if (phase_ != phase::running) return done("the kernel is " + state_);
  const auto content =
      nlohmann::json{{"code", code},           {"silent", true},
                     {"store_history", false}, {"user_expressions", nlohmann::json::object()},
                     {"allow_stdin", false},   {"stop_on_error", false}};
  auto msg = protocol::make_message("execute_request", content.dump(), session_);
  if (send_to_kernel(channel::shell, msg) == send_result::refused)
    return done("the kernel's input queue is full");
  remember(msg.msg_id(), {{}, {}, true, "execute_request", {}});
  internal_replies_.emplace(msg.msg_id(), std::move(done));
}

// The kernel went busy or idle for a tracked execute: the execution time
// limit (the policy's, or a REST execute's own timeout) runs while it is busy.
void kernel::track_execution(const std::string& id, std::string_view state) {
  if (state == "idle" && id == running_execute_) {
    running_execute_.clear();
    execution_timer_.cancel();
  } else if (state == "busy" && id != running_execute_) {
    auto record = executions_.find(id);
    if (!record) return;
    std::optional<std::chrono::milliseconds> limit = record->timeout;
    if (opts_.limits.max_execution.count() > 0 && (!limit || *limit > opts_.limits.max_execution))
      limit = std::chrono::duration_cast<std::chrono::milliseconds>(opts_.limits.max_execution);
    running_execute_ = id;
    execution_timer_.cancel();
    if (!limit) return;
    if (record->reply_lost)  // taken up after a restart: the limit counts from its start
      execution_timer_.expires_at(
          std::max(std::chrono::steady_clock::now(), record->started_steady + *limit));
    else
      execution_timer_.expires_after(*limit);
    execution_timer_.async_wait([weak = weak_from_this(), id](const boost::system::error_code& ec) {
      if (auto self = weak.lock(); self && !ec) self->on_execution_limit(id);
    });
  }
}

// Past its limit: interrupt (state survives); if the kernel is still busy
// with it after a grace period, restart (state lost, and said so).
void kernel::on_execution_limit(const std::string& msg_id) {
  if (msg_id != running_execute_ || phase_ != phase::running) return;
  auto record = executions_.find(msg_id);
  if (record && !record->timed_out) {
    record->timed_out = true;
    log::warn("execution_timed_out", {{"kernel_id", id()}, {"msg_id", msg_id}});
    interrupt();
    execution_timer_.expires_after(opts_.limits.interrupt_grace);
    execution_timer_.async_wait([weak = weak_from_this(), msg_id](const boost::system::error_code& ec) {
      if (auto self = weak.lock(); self && !ec) self->on_execution_limit(msg_id);
    });
    return;
  }
  log::warn("execution_restart", {{"kernel_id", id()}, {"msg_id", msg_id}});
  ++gateway_metrics().kernel_restarts_for_time;
  answer_lost_executes("the execution passed its time limit and the kernel did not stop; it was restarted");
  restart([weak = weak_from_this()](const std::string& error) {
    if (auto self = weak.lock(); self && !error.empty())
      log::error("kernel_restart_failed", {{"kernel_id", self->id()}, {"error", error}});
  });
}

void kernel::interrupt() {
  if (phase_ != phase::running) return;
  if (opts_.spec.interrupt_mode == "message") {
    send_to_kernel(channel::control, protocol::make_message("interrupt_request", "{}", session_));
  } else {
    box_->signal(file_name_, SIGINT);
  }
}

void kernel::send_status(std::string_view state) {
  state_ = std::string(state);
  broadcast(std::make_shared<outgoing>(channel::iopub, protocol::make_status(state, session_, nullptr)));
}

void kernel::stop_process(done_handler after_exit) {
  stop_done_ = std::move(after_exit);
  if (!process_running_) {
    auto done = std::move(stop_done_);
    stop_done_ = nullptr;
    boost::asio::post(io_, [done] { done({}); });
    return;
  }
  send_to_kernel(channel::control,
                 protocol::make_message("shutdown_request", R"({"restart":false})", session_));
  stop_step_ = 0;
  arm_stop_step();
}

// shutdown_request, then SIGTERM, then SIGKILL, each after the grace; an exit
// still unheard of a grace after SIGKILL (the process is stuck in the kernel,
// or its sandbox lost track of it) does not hold the caller forever. Each step
// arms the next from the timer's handler, so nothing owns itself.
void kernel::arm_stop_step() {
  stop_timer_.expires_after(opts_.limits.shutdown_grace);
  stop_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || !self->process_running_) return;
    const int stage = self->stop_step_++;
    if (stage == 2) {
      log::warn("kernel_exit_unconfirmed", {{"kernel_id", self->id()}});
      self->process_running_ = false;
      if (auto done = std::move(self->stop_done_)) {
        self->stop_done_ = nullptr;
        done({});
      }
      return;
    }
    self->box_->signal(self->file_name_, stage == 0 ? SIGTERM : SIGKILL);
    self->arm_stop_step();
  });
}

void kernel::on_process_exit(const exit_status& st) {
  process_running_ = false;
  stop_timer_.cancel();
  log::info("kernel_process_exited", {{"kernel_id", id()}, {"status", st.describe()}});
  if (stop_done_) {
    auto done = std::move(stop_done_);
    stop_done_ = nullptr;
    done({});
    return;
  }
  if (start_done_) {
    on_started("the kernel exited during start-up (" + st.describe() + ")");
    return;
  }
  if (phase_ != phase::running) return;
  // An unexpected death: tell the clients why, then restart per policy.
  log::warn("kernel_died", {{"kernel_id", id()}, {"status", st.describe()}});
  auto msg = protocol::make_message(
      "status", nlohmann::json{{"execution_state", "restarting"}, {"reason", st.describe()}}.dump(),
      session_);
  state_ = "restarting";
  broadcast(std::make_shared<outgoing>(channel::iopub, std::move(msg)));
  answer_lost_executes("the kernel died (" + st.describe() + ") and is being restarted");
  executions_.end_all("the kernel died (" + st.describe() + ")", true);
  forget_taken_up();
  running_execute_.clear();
  execution_timer_.cancel();
  if (auto_restarts_++ >= opts_.limits.max_restarts) {
    finish_stop();
    return;
  }
  phase_ = phase::restarting;
  launch([self = shared_from_this()](const std::string& error) {
    if (!error.empty()) log::error("kernel_restart_failed", {{"kernel_id", self->id()}, {"error", error}});
  });
}

// Executes in flight when the kernel died will never be answered by it: each
// gets an error reply naming the cause, and an idle status, so no client waits forever.
void kernel::answer_lost_executes(const std::string& why) {
  nlohmann::json error = {
      {"ename", "KernelDied"}, {"evalue", why}, {"traceback", nlohmann::json::array({"KernelDied: " + why})}};
  const std::string error_content = error.dump();
  error["status"] = "error";
  error["execution_count"] = nullptr;
  const std::string reply_content = error.dump();
  for (auto it = pending_.begin(); it != pending_.end();) {
    auto& req = it->second;
    if (req.internal || req.msg_type != "execute_request") {
      ++it;
      continue;
    }
    protocol::message request;
    request.header = req.header;
    if (protocol::parse_header(request.header, request.head, false)) {
      it = pending_.erase(it);
      continue;
    }
    auto shown = protocol::make_reply(request, "error", error_content);
    const std::shared_ptr<outgoing> answers[] = {
        std::make_shared<outgoing>(channel::iopub, std::move(shown)),
        std::make_shared<outgoing>(channel::shell,
                                   protocol::make_reply(request, "execute_reply", reply_content)),
        std::make_shared<outgoing>(channel::iopub, protocol::make_status("idle", session_, &request))};
    for (const auto& out : answers) {
      if (auto client = recipient(req))
        client->deliver(out);
      else
        buffer_for(req.session_id, out);
    }
    it = pending_.erase(it);
  }
}

void kernel::restart(done_handler done) {
  if (phase_ != phase::running) {
    done("the kernel is not running");
    return;
  }
  phase_ = phase::restarting;
  send_status("restarting");
  executions_.end_all("the kernel was restarted", true);
  forget_taken_up();
  running_execute_.clear();
  execution_timer_.cancel();
  auto self = shared_from_this();
  stop_process([self, done = std::move(done)](const std::string&) mutable { self->launch(std::move(done)); });
}

void kernel::shutdown(done_handler done) {
  if (phase_ == phase::ended) {
    done({});
    return;
  }
  if (start_done_) on_started("the kernel was shut down during start-up");
  phase_ = phase::stopping;
  auto self = shared_from_this();
  stop_process([self, done = std::move(done)](const std::string&) {
    self->finish_stop();
    done({});
  });
}

void kernel::terminate(const std::string& why) {
  if (start_done_) on_started("the kernel's sandbox ended");
  stop_done_ = nullptr;
  process_running_ = false;
  finish_stop(why);
}

void kernel::finish_stop(const std::string& why) {
  if (phase_ == phase::ended) return;
  phase_ = phase::ended;
  state_ = "dead";
  start_timer_.cancel();
  probe_timer_.cancel();
  stop_timer_.cancel();
  execution_timer_.cancel();
  executions_.end_all("the kernel was shut down (" + why + ")", false);
  forget_taken_up();
  for (auto& [msg_id, done] : std::exchange(internal_replies_, {}))
    done("the kernel ended (" + why + ")");
  auto clients = std::move(clients_);
  clients_.clear();
  for (const auto& c : clients)
    c->close(1001, why);
  close_channels();
  replay_.clear();
  held_.clear();
  pending_.clear();
  pending_order_.clear();
  std::error_code ec;
  if (opts_.owns_sandbox) {
    box_->destroy();
    fs::remove_all(box_->run_dir_host(), ec);
  } else {
    box_->kill_tree(file_name_);  // what the kernel left running, daemons included
    socket_pins::clear(box_->run_dir_host(), socket_names());
    for (const char* suffix : {".json", ".journal.0", ".journal.1"})
      ::unlinkat(AT_FDCWD, (box_->run_dir_host() / (file_name_ + suffix)).c_str(), 0);
  }
  log::info("kernel_ended", {{"kernel_id", id()}});
}

}  // namespace sandgate::gateway
