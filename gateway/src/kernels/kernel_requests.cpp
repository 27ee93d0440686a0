// The gateway's own requests to a kernel: the REST execute, silent
// executes (a warm pool's warm-up, a claimed kernel's environment), the
// nudge a client gets on connect; and what the time limit of an execute does.

#include "execution_watchdog.hpp"
#include "journal_takeover.hpp"
#include "kernel.hpp"
#include "kernel_channels.hpp"

#include <gateway/log.hpp>

namespace sandgate::gateway {

using protocol::channel;

namespace {

execution_record failed_execution(std::string msg_id, const std::string& ename, const std::string& evalue) {
  execution_record r;
  r.msg_id = std::move(msg_id);
  r.status = "error";
  r.error = nlohmann::json{{"ename", ename}, {"evalue", evalue}, {"traceback", nlohmann::json::array()}};
  r.finished = std::chrono::steady_clock::now();
  return r;
}

}  // namespace

protocol::message kernel::execute_request(const std::string& code, bool silent) const {
  const auto content = nlohmann::json{{"code", code},
                                      {"silent", silent},
                                      {"store_history", !silent},
                                      {"user_expressions", nlohmann::json::object()},
                                      {"allow_stdin", false},
                                      {"stop_on_error", false}};
  return protocol::make_message("execute_request", content.dump(), session_);
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
  if (phase_ != phase::running)
    return done(failed_execution(protocol::new_uuid4(), "KernelNotRunning", "the kernel is " + state_));
  auto msg = execute_request(code, false);
  own_.add(msg.msg_id());
  touch();
  if (channels_->send(channel::shell, msg) == send_result::refused) {
    own_.forget(msg.msg_id());
    return done(failed_execution(msg.msg_id(), "GatewayInputRefused", "the kernel's input queue is full"));
  }
  executions_.begin(msg.msg_id(), msg.content, {}, timeout);
  executions_.wait(msg.msg_id(), std::move(done));
}

void kernel::execute_silently(const std::string& code, done_handler done) {
  if (phase_ != phase::running) return done("the kernel is " + state_);
  auto msg = execute_request(code, true);
  if (channels_->send(channel::shell, msg) == send_result::refused)
    return done("the kernel's input queue is full");
  own_.add(msg.msg_id(), std::move(done));
}

void kernel::nudge() {
  auto msg = protocol::make_message("kernel_info_request", "{}", session_);
  own_.add(msg.msg_id());
  channels_->send(channel::shell, msg);
}

void kernel::assign(const std::string& owner, bool owns_sandbox,
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
  if (phase_ == phase::created || phase_ == phase::starting || phase_ == phase::restarting) {
    for (const auto& [name, value] : env)
      pending_env_[name] = value;
    pending_env_done_.push_back(std::move(done));
    return;
  }
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

void kernel::take_up_executions(const std::vector<std::string>& stored,
                                std::function<bool(const std::string& msg_id)> recorded) {
  takeover_->expect(stored, std::move(recorded));
}

// The execute would not stop after an interrupt: its clients are told, and
// the kernel restarts (its state is lost).
void kernel::on_execution_limit(const std::string& /*msg_id*/) {
  if (phase_ != phase::running) return;
  clients_.answer_lost_executes(
      "the execution passed its time limit and the kernel did not stop; it was restarted", session_);
  restart([weak = weak_from_this()](const std::string& error) {
    if (auto self = weak.lock(); self && !error.empty())
      log::error("kernel_restart_failed", {{"kernel_id", self->id()}, {"error", error}});
  });
}

}  // namespace sandgate::gateway
