#include "kernel.hpp"

#include "execution_watchdog.hpp"
#include "journal_takeover.hpp"
#include "kernel_channels.hpp"
#include "kernel_process.hpp"

#include <gateway/ids.hpp>
#include <gateway/log.hpp>

#include <csignal>
#include <utility>

namespace sandgate::gateway {
namespace fs = std::filesystem;
using protocol::channel;

std::shared_ptr<kernel> kernel::create(boost::asio::io_context& io, zmq::context_t& zmq, kernel_options opts,
                                       std::shared_ptr<sandbox> box, std::shared_ptr<output_budget> budget) {
  auto k = std::make_shared<kernel>(passkey{}, io, std::move(opts), std::move(box));
  std::weak_ptr<kernel> weak = k;
  k->channels_ = std::make_shared<kernel_channels>(io, zmq, k->id(), k->conn_.key, k->session_,
                                                   k->opts_.spec.iopub_backpressure,
                                                   [weak](channel ch, protocol::message&& msg) {
                                                     if (auto self = weak.lock())
                                                       self->on_kernel_message(ch, std::move(msg));
                                                   });
  k->channels_->on_drained([weak] {
    if (auto self = weak.lock()) self->input_waiters_.resume_all();
  });
  if (k->opts_.limits.max_message_bytes > 0)
    k->channels_->set_message_limit(k->opts_.limits.max_message_bytes,
                                    [weak](channel ch, protocol::message&& head, std::size_t bytes) {
                                      if (auto self = weak.lock())
                                        self->on_oversized(ch, std::move(head), bytes);
                                    });
  if (budget)
    k->output_ = std::make_shared<output_account>(std::move(budget), [weak](bool paused) {
      if (auto self = weak.lock()) self->channels_->set_over_budget(paused);
    });
  k->watchdog_ = std::make_shared<execution_watchdog>(
      io, k->executions_, k->id(), k->opts_.limits.max_execution, k->opts_.limits.interrupt_grace,
      execution_watchdog::actions{[weak] {
                                    if (auto self = weak.lock()) self->interrupt();
                                  },
                                  [weak](const std::string& msg_id) {
                                    if (auto self = weak.lock()) self->on_execution_limit(msg_id);
                                  }});
  k->takeover_ = std::make_shared<journal_takeover>(
      io, k->executions_, k->id(), [weak](const protocol::message& msg, std::string_view status) {
        if (auto self = weak.lock()) self->record(channel::iopub, msg, status);
      });
  return k;
}

kernel::kernel(passkey, boost::asio::io_context& io, kernel_options opts, std::shared_ptr<sandbox> box)
    : io_(io),
      opts_(std::move(opts)),
      session_(protocol::new_uuid4()),
      clients_(opts_.id,
               client_hub_limits{opts_.limits.replay_retention, opts_.limits.replay_buffer_bytes,
                                 opts_.limits.max_replay_sessions, opts_.limits.max_pending_requests}),
      own_(opts_.limits.max_pending_requests) {
  // xeus 2.4.1 kernels abort ("Invalid argument") on an ipc endpoint over
  // 31 bytes: "ipc://" + ip + "-4" with ip /run/sandgate/k + 8 hex is 31. A
  // short name, unique within the sandbox, for the kernel's process,
  // sockets and files.
  std::string file_name =
      opts_.file_name.empty() ? "k" + opts_.id.substr(opts_.id.size() - 8) : opts_.file_name;
  conn_.transport = "ipc";
  conn_.ip = (box->run_dir_inside() / file_name).string();
  conn_.shell_port = 1;
  conn_.iopub_port = 2;
  conn_.stdin_port = 3;
  conn_.control_port = 4;
  conn_.hb_port = 5;
  conn_.key = opts_.key.empty() ? random_hex(32) : opts_.key;
  conn_.kernel_name = opts_.spec.name;
  process_ =
      std::make_shared<kernel_process>(io, opts_.id, std::move(box), std::move(file_name), opts_.limits);
}

kernel::~kernel() {
  if (output_) output_->close();
  if (channels_) channels_->close();
  if (opts_.owns_sandbox && !left_running_) process_->box().destroy("ended");
}

nlohmann::json kernel::reattach_record() const {
  return {{"name", opts_.spec.name}, {"key", conn_.key}, {"file", process_->file_name()}};
}

void kernel::start(done_handler done) {
  phase_ = phase::starting;
  launch(std::move(done));
}

void kernel::launch(done_handler done) {
  start_done_ = std::move(done);
  state_ = "starting";
  channels_->close();
  input_waiters_.resume_all();  // what waited went with the channels; next messages are held
  expect_ready();
  std::weak_ptr<kernel> weak = weak_from_this();
  process_->launch(
      opts_, conn_,
      [weak](const std::string& error) {
        if (auto self = weak.lock()) error.empty() ? self->open_channels() : self->on_started(error);
      },
      [weak](const exit_status& st) {
        if (auto self = weak.lock()) self->on_process_exit(st);
      });
}

void kernel::reattach(done_handler done) {
  phase_ = phase::starting;
  start_done_ = std::move(done);
  state_ = "starting";
  expect_ready();
  std::weak_ptr<kernel> weak = weak_from_this();
  process_->reclaim(
      [weak](const std::string& error) {
        if (auto self = weak.lock()) error.empty() ? self->open_channels() : self->on_started(error);
      },
      [weak](const exit_status& st) {
        if (auto self = weak.lock()) self->on_process_exit(st);
      });
}

// The start, launch or re-attach, ends within the start timeout.
void kernel::expect_ready() {
  process_->expect_ready_within(opts_.limits.start_timeout, [weak = weak_from_this()] {
    auto self = weak.lock();
    if (!self || !self->start_done_) return;
    log::warn("kernel_start_timeout", {{"kernel_id", self->id()}});
    self->stop_process([self] {
      self->on_started("the kernel did not answer kernel_info within " +
                       std::to_string(self->opts_.limits.start_timeout.count()) + " s");
    });
  });
}

void kernel::open_channels() {
  if (!start_done_) return;
  auto& box = process_->box();
  std::weak_ptr<kernel> weak = weak_from_this();
  channels_->open(box.run_dir_host(), process_->socket_names(), box.owner_uid(),
                  [weak](const std::string& error) {
                    auto self = weak.lock();
                    if (!self) return;
                    if (error.empty()) return self->on_started({});
                    self->stop_process([self, error] { self->on_started(error); });
                  });
}

void kernel::on_started(const std::string& error) {
  if (!start_done_) return;
  process_->cancel_ready_deadline();
  auto done = std::exchange(start_done_, nullptr);
  if (error.empty()) {
    phase_ = phase::running;
    // A taken-over kernel whose cells were running when last stored is busy
    // from the start, not idle until its journal is read.
    state_presumed_ = takeover_->any();
    state_ = state_presumed_ ? "busy" : "idle";
    if (takeover_->waiting())
      takeover_->read(process_->files_base(), opts_.limits.journal_bytes, channels_->signer(),
                      [weak = weak_from_this()](const std::vector<std::string>& running) {
                        auto self = weak.lock();
                        if (!self) return;
                        for (const auto& msg_id : running) {
                          self->state_ = "busy";
                          self->watchdog_->on_state(msg_id, "busy");  // the limit counts from its start
                        }
                        // The cells the stored rows told of ended while no gateway listened.
                        if (std::exchange(self->state_presumed_, false) && running.empty())
                          self->state_ = "idle";
                      });
    apply_pending_env();  // before what clients sent during the start
    send_held();
    log::info("kernel_ready", {{"kernel_id", id()}, {"kernel_name", name()}});
  } else {
    log::warn("kernel_start_failed", {{"kernel_id", id()}, {"error", error}});
    pending_env_.clear();
    for (auto& d : std::exchange(pending_env_done_, {}))
      d("the kernel did not start: " + error);
    finish_stop();
  }
  for (auto& w : std::exchange(when_ready_, {}))
    w();
  done(error);
}

void kernel::apply_pending_env() {
  if (pending_env_done_.empty()) return;
  auto dones = std::exchange(pending_env_done_, {});
  apply_env(std::exchange(pending_env_, {}), [dones = std::move(dones)](const std::string& error) {
    for (const auto& d : dones)
      d(error);
  });
}

void kernel::leave_running() {
  if (phase_ == phase::ended) return;
  phase_ = phase::ended;
  left_running_ = true;
  start_done_ = nullptr;
  process_->forget();
  watchdog_->reset();
  clients_.close_all(1001, "the gateway is restarting; the kernel keeps running");
  channels_->close();
  input_waiters_.resume_all();
  log::info("kernel_left_running", {{"kernel_id", id()}});
}

void kernel::interrupt() {
  if (phase_ != phase::running) return;
  if (opts_.spec.interrupt_mode == "message")
    channels_->send(channel::control, protocol::make_message("interrupt_request", "{}", session_));
  else
    process_->signal(SIGINT);
}

void kernel::stop_process(std::function<void()> after_exit) {
  process_->stop(
      [weak = weak_from_this()] {
        if (auto self = weak.lock())
          self->channels_->send(
              channel::control,
              protocol::make_message("shutdown_request", R"({"restart":false})", self->session_));
      },
      std::move(after_exit));
}

void kernel::on_process_exit(const exit_status& st) {
  if (start_done_) return on_started("the kernel exited during start-up (" + st.describe() + ")");
  if (phase_ != phase::running) return;
  // Killed as its sandbox ends (its TTL): no restart; the sandbox's end, which
  // follows, ends the kernel and its executions with the reason.
  if (!st.sandbox_ended.empty()) return;
  // An unexpected death: tell the clients why, then restart per policy.
  log::warn("kernel_died", {{"kernel_id", id()}, {"status", st.describe()}});
  state_ = "restarting";
  clients_.broadcast(std::make_shared<outgoing>(
      channel::iopub,
      protocol::make_message(
          "status", nlohmann::json{{"execution_state", "restarting"}, {"reason", st.describe()}}.dump(),
          session_)));
  clients_.answer_lost_executes("the kernel died (" + st.describe() + ") and is being restarted", session_);
  executions_.end_all("the kernel died (" + st.describe() + ")", true);
  takeover_->forget();
  watchdog_->reset();
  own_.fail_all("the kernel died (" + st.describe() + ")");
  if (auto_restarts_++ >= opts_.limits.max_restarts) return finish_stop();
  phase_ = phase::restarting;
  launch([weak = weak_from_this()](const std::string& error) {
    if (auto self = weak.lock(); self && !error.empty())
      log::error("kernel_restart_failed", {{"kernel_id", self->id()}, {"error", error}});
  });
}

void kernel::restart(done_handler done) {
  if (phase_ != phase::running) return done("the kernel is not running");
  phase_ = phase::restarting;
  send_status("restarting");
  executions_.end_all("the kernel was restarted", true);
  takeover_->forget();
  watchdog_->reset();
  own_.fail_all("the kernel was restarted");
  stop_process(
      [self = shared_from_this(), done = std::move(done)]() mutable { self->launch(std::move(done)); });
}

void kernel::shutdown(done_handler done) {
  if (phase_ == phase::ended) return done({});
  if (start_done_) on_started("the kernel was shut down during start-up");
  phase_ = phase::stopping;
  stop_process([self = shared_from_this(), done = std::move(done)] {
    self->finish_stop();
    done({});
  });
}

void kernel::terminate(const std::string& why, const std::string& sandbox_ended) {
  if (start_done_) on_started("the kernel's sandbox ended");
  process_->forget();
  finish_stop(why, sandbox_ended);
}

void kernel::finish_stop(const std::string& why, const std::string& sandbox_ended) {
  if (phase_ == phase::ended) return;
  phase_ = phase::ended;
  state_ = "dead";
  process_->cancel_ready_deadline();
  watchdog_->reset();
  if (sandbox_ended.empty())
    executions_.end_all("the kernel was shut down (" + why + ")", false);
  else
    executions_.end_with_sandbox(sandbox_ended, describe_sandbox_end(sandbox_ended));
  takeover_->forget();
  own_.fail_all("the kernel ended (" + why + ")");
  clients_.close_all(1001, why);
  channels_->close();
  input_waiters_.resume_all();
  held_.clear();
  if (opts_.owns_sandbox) {
    process_->forget();
    process_->box().destroy(sandbox_ended.empty() ? "ended" : sandbox_ended);
    std::error_code ec;
    fs::remove_all(process_->box().run_dir_host(), ec);
  } else {
    process_->remove_traces();
  }
  log::info("kernel_ended", {{"kernel_id", id()}});
}

}  // namespace sandgate::gateway
