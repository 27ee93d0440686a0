// POST /api/sandboxes/{id}/commands: a command run inside the sandbox, in
// its own process group, with captured output and a timeout that kills it
// and everything it started.
#include "router.hpp"

#include "../audit/audit_log.hpp"
#include "../util/metrics.hpp"

#include <gateway/ids.hpp>
#include <jupyter_protocol/message.hpp>

#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include <cctype>
#include <csignal>

namespace sandgate::gateway {
namespace http = boost::beast::http;
using json = nlohmann::json;

namespace {

constexpr std::size_t max_command_output = 1024 * 1024;  // per stream
constexpr std::size_t max_stdin_bytes = 16 * 1024 * 1024;
constexpr std::uint64_t default_timeout_s = 60;

struct command_run {
  std::string stdout_text;
  std::string stderr_text;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  bool answered = false;
  nlohmann::ordered_json audit;  // the fields of its audit line
};

}  // namespace

void router::post_command(context& ctx, const std::shared_ptr<sandbox_entry>& s) {
  std::string error;
  auto body = body_object(ctx.req.body(), error);
  if (!body) return ctx.reply(ctx.error(http::status::bad_request, error));
  static const std::set<std::string> known = {"cmd", "cwd", "env", "stdin", "timeout_s"};
  for (const auto& [k, v] : body->items())
    if (!known.count(k))
      return ctx.reply(ctx.error(http::status::bad_request, "Unknown field \"" + k + "\""));

  spawn_request req;
  req.name = "cmd-" + protocol::new_uuid4();
  const auto& cmd = body->value("cmd", json());
  if (cmd.is_string() && !cmd.get_ref<const std::string&>().empty()) {
    req.argv = {"/bin/bash", "-lc", cmd.get<std::string>()};
  } else if (cmd.is_array() && !cmd.empty()) {
    for (const auto& a : cmd) {
      if (!a.is_string())
        return ctx.reply(ctx.error(http::status::bad_request, "\"cmd\" array items must be strings"));
      req.argv.push_back(a.get<std::string>());
    }
  } else {
    return ctx.reply(
        ctx.error(http::status::bad_request, "\"cmd\" must be a non-empty string or argv array"));
  }
  for (const auto& a : req.argv)
    if (a.find('\0') != std::string::npos)
      return ctx.reply(ctx.error(http::status::bad_request, "\"cmd\" must not contain NUL bytes"));

  req.cwd = s->box->workspace_inside();
  if (body->contains("cwd") && !(*body)["cwd"].is_null()) {
    if (!(*body)["cwd"].is_string())
      return ctx.reply(ctx.error(http::status::bad_request, "\"cwd\" must be a string"));
    domain_error err;
    auto cwd = workspace_files::normalize((*body)["cwd"].get<std::string>(), err);
    if (!cwd) return ctx.reply(ctx.error(err));
    if (!cwd->empty()) req.cwd += "/" + *cwd;
  }

  req.env = {
      {"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"LANG", "C.UTF-8"}, {"HOME", s->box->workspace_inside()}};
  for (const auto& [k, v] : s->env)
    req.env[k] = v;
  if (body->contains("env") && !(*body)["env"].is_null()) {
    const auto& env = (*body)["env"];
    if (!env.is_object() || env.size() > 256)
      return ctx.reply(
          ctx.error(http::status::bad_request, "\"env\" must be an object of at most 256 strings"));
    for (const auto& [k, v] : env.items()) {
      if (!is_env_name(k) || !v.is_string())
        return ctx.reply(ctx.error(http::status::bad_request, "\"env\": bad entry \"" + k + "\""));
      req.env[k] = v.get<std::string>();
    }
  }
  if (body->contains("stdin") && !(*body)["stdin"].is_null()) {
    if (!(*body)["stdin"].is_string() ||
        (*body)["stdin"].get_ref<const std::string&>().size() > max_stdin_bytes)
      return ctx.reply(ctx.error(http::status::bad_request, "\"stdin\" must be a string of at most 16 MiB"));
    req.stdin_data = (*body)["stdin"].get<std::string>();
  }
  std::uint64_t timeout_s = default_timeout_s;
  if (s->max_execution_s) timeout_s = std::min(timeout_s, s->max_execution_s);
  if (body->contains("timeout_s") && !(*body)["timeout_s"].is_null()) {
    const auto& t = (*body)["timeout_s"];
    if (!t.is_number() || !(t.get<double>() > 0))
      return ctx.reply(ctx.error(http::status::bad_request, "\"timeout_s\" must be a positive number"));
    if (s->max_execution_s && t.get<double>() > static_cast<double>(s->max_execution_s))
      return ctx.reply(ctx.error(http::status::bad_request,
                                 "\"timeout_s\" is above the sandbox's maximum execution time of " +
                                     std::to_string(s->max_execution_s) + " s"));
    timeout_s = 0;
    req.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(t.get<double>() * 1000));
  }
  if (!req.timeout) req.timeout = std::chrono::seconds(timeout_s);
  req.capture = true;
  req.output_limit = max_command_output;

  auto run = std::make_shared<command_run>();
  // The audit log gets the command's digest (of the string, or of the argv
  // items joined by NUL bytes), never the command.
  std::string joined = cmd.is_string() ? cmd.get<std::string>() : std::string();
  if (!cmd.is_string())
    for (std::size_t i = 0; i < req.argv.size(); ++i)
      joined += (i ? std::string(1, '\0') : std::string()) + req.argv[i];
  run->audit = {{"sandbox_id", s->id},
                {"command", req.name},
                {"cmd_sha256", sha256_hex(joined)},
                {"cmd_bytes", joined.size()}};
  auto self = ctx.shared_from_this();
  // The supervisor kills at the deadline; this timer only covers a
  // supervisor that cannot (it is gone, or its answer is lost).
  auto backstop = std::make_shared<boost::asio::steady_timer>(kernels_.io());
  ++s->commands_running;
  s->touch();
  auto finish = [this, self, s, run, backstop](const exit_status& st, bool gave_up) {
    if (run->answered) return;
    run->answered = true;
    backstop->cancel();
    ++gateway_metrics().commands;
    const bool sandbox_ended = !st.sandbox_ended.empty();
    const bool timed_out = !sandbox_ended && (st.timed_out || gave_up);
    if (timed_out) ++gateway_metrics().command_timeouts;
    --s->commands_running;
    s->touch();
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - run->started)
            .count();
    auto line = run->audit;
    line["outcome"] = sandbox_ended                ? "sandbox_ended"
                      : timed_out                  ? "timeout"
                      : st.code == 0 && !st.signal ? "ok"
                                                   : "error";
    line["exit_code"] =
        st.signal || st.code < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(st.code);
    line["signal"] = st.signal ? nlohmann::ordered_json(st.signal) : nlohmann::ordered_json(nullptr);
    line["oom"] = st.oom;
    if (sandbox_ended) line["sandbox_ended"] = st.sandbox_ended;
    line["duration_ms"] = ms;
    audit(*self, "command.run", line);
    json out = {{"stdout", run->stdout_text},
                {"stderr", run->stderr_text},
                {"exit_code", st.signal || st.code < 0 ? json(nullptr) : json(st.code)},
                {"signal", st.signal ? json(st.signal) : json(nullptr)},
                {"timed_out", timed_out},
                {"oom", st.oom},
                {"sandbox_ended", sandbox_ended ? json(st.sandbox_ended) : json(nullptr)},
                {"duration_ms", ms},
                {"truncated", st.truncated}};
    auto res = self->json(http::status::ok, json::object());
    res.body() = out.dump(-1, ' ', false, json::error_handler_t::replace);  // invalid UTF-8 becomes U+FFFD
    self->reply(std::move(res));
  };
  const auto name = req.name;
  const auto deadline = *req.timeout + std::chrono::seconds(5);
  s->box->spawn(
      req,
      [self, s, run, finish, backstop, name, deadline](const std::string& failure) {
        if (!failure.empty()) {
          run->answered = true;
          --s->commands_running;
          auto line = run->audit;
          line["outcome"] = "not_started";
          self->owner->audit(*self, "command.run", line);
          return self->reply(self->error(http::status::conflict, "The command could not start: " + failure));
        }
        backstop->expires_after(deadline);
        backstop->async_wait([s, finish, name](const boost::system::error_code& ec) {
          if (ec) return;
          s->box->kill_tree(name);
          exit_status killed;
          killed.signal = SIGKILL;
          killed.timed_out = true;
          finish(killed, true);
        });
      },
      [finish](const exit_status& st) { finish(st, false); },
      [run](bool is_stderr, std::string_view data) {
        auto& text = is_stderr ? run->stderr_text : run->stdout_text;
        text.append(data.substr(0, max_command_output - std::min(max_command_output, text.size())));
      });
}

}  // namespace sandgate::gateway
