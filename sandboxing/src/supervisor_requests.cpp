// The supervisor's answers to the gateway's requests, and its ending.
#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>

#include "supervisor_loop.hpp"

namespace sandgate::sandboxing::detail {

void supervisor::handle(const json& message) {
  control::reply result;
  result.req = message.value("req", std::uint64_t{0});
  const std::string op = message.value("op", std::string());
  try {
    if (op == "spawn") {
      result = do_spawn(message);
    } else if (op == "signal") {
      result = do_signal(message);
    } else if (op == "ping") {
      result.ok = true;
    } else if (op == "shutdown") {
      result.ok = true;
      connection_->send(json(result));
      finish(0);
      return;
    } else {
      result.error = "unknown op \"" + op + "\"";
    }
  } catch (const std::exception& e) {
    result.ok = false;
    result.error = e.what();
  }
  connection_->send(json(result));
  if (connection_->broken()) drop_connection();
}

control::reply supervisor::do_spawn(const json& message) {
  const auto request = message.get<control::spawn_request>();
  control::reply result;
  result.req = request.req;
  if (request.id.empty()) {
    result.error = "spawn: id must not be empty";
  } else if (children_.contains(request.id)) {
    result.error = "spawn: a child named \"" + request.id + "\" is running";
  } else if (children_.size() >= max_children) {
    result.error = "spawn: too many children";
  } else if (request.argv.empty()) {
    result.error = "spawn: argv must not be empty";
  } else {
    spawn_spec spec;
    spec.argv = request.argv;
    spec.env = config_.base_env;
    for (const auto& [key, value] : request.env)
      spec.env[key] = value;
    spec.cwd = request.cwd.empty() ? "/workspace" : request.cwd;
    spec.log = request.log;
    const pid_t pid = spawn_confined(spec, config_.confine);
    children_[request.id] = pid;
    names_[pid] = request.id;
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
  if (request.signal < 1 || request.signal >= NSIG) {
    result.error = "signal: " + std::to_string(request.signal) + " is not a signal number";
  } else if (child == children_.end()) {
    result.error = "signal: no running child named \"" + request.id + "\"";
  } else if (::kill(request.group ? -child->second : child->second, request.signal) == -1 && errno != ESRCH) {
    result.error = "kill(" + std::to_string(request.group ? -child->second : child->second) + ", " +
                   std::to_string(request.signal) + "): " + std::strerror(errno);
  } else {
    result.ok = true;
  }
  return result;
}

void supervisor::finish(int code) {
  ::kill(-1, SIGKILL);  // from pid 1: every other process of the sandbox
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) break;
    const auto name = names_.find(pid);
    if (name == names_.end()) continue;
    control::exit_event event;
    event.id = name->second;
    if (WIFEXITED(status)) {
      event.code = WEXITSTATUS(status);
    } else {
      event.signal = WTERMSIG(status);
    }
    names_.erase(name);
    if (connection_) connection_->send(json(event));
  }
  children_.clear();
  if (connection_) connection_->drain(1000);
  exit_code_ = code;
}

}  // namespace sandgate::sandboxing::detail
