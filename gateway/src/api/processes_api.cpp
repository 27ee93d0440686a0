// /api/sandboxes/{id}/processes: programs that keep running in a sandbox,
// with stdin, a terminal if asked, and output a client reads as it comes
// (the attach WebSocket, http/process_session) or later from the
// supervisor's rings. The supervisor owns them; the gateway asks it
// (sandboxes/process_spec for the shapes).
#include "router.hpp"

#include "../audit/audit_log.hpp"
#include "../sandboxes/process_spec.hpp"

#include <gateway/ids.hpp>
#include <sandboxing/base64.hpp>

#include <boost/asio/post.hpp>

namespace sandgate::gateway {
namespace http = boost::beast::http;
using json = nlohmann::json;
namespace ctl = sandboxing::control;

namespace {

constexpr std::size_t max_stdin_request_bytes = 512 * 1024;  // one control frame, base64 included
constexpr double default_wait_s = 30;
constexpr double max_wait_s = 3600;

// The supervisor's error, as the API says it: a process it does not know is a 404.
domain_error supervisor_error(const ctl::reply& r, const std::string& process_id) {
  if (r.error.find("no process named") != std::string::npos ||
      r.error.find("no running child named") != std::string::npos)
    return {fault::not_found, "Process does not exist: " + process_id};
  const auto colon = r.error.find(": ");
  const bool prefixed = colon != std::string::npos && r.error.find(' ') > colon;  // "op: why"
  return {fault::conflict, prefixed ? r.error.substr(colon + 2) : r.error};
}

}  // namespace

void router::ask_supervisor(context& ctx, const std::shared_ptr<sandbox_entry>& s, json op,
                            const std::string& process_id, std::function<void(const json&)> then) {
  s->touch();
  auto self = ctx.shared_from_this();
  s->box->call(std::move(op), [self, process_id, then = std::move(then)](const ctl::reply& r) {
    if (!r.ok) return self->reply(self->error(supervisor_error(r, process_id)));
    then(r.data);
  });
}

std::shared_ptr<sandbox_entry> router::own_process(context& ctx, const std::string& sandbox_id,
                                                   const std::string& process_id) {
  auto s = own_sandbox(ctx, sandbox_id);
  if (!s) return nullptr;
  if (!valid_process_id(process_id)) {
    ctx.reply(ctx.not_found("Process does not exist: " + process_id, std::nullopt));
    return nullptr;
  }
  return s;
}

void router::post_process(context& ctx, const std::string& sandbox_id) {
  auto s = own_sandbox(ctx, sandbox_id);
  if (!s) return;
  std::string error;
  auto body = body_object(ctx.req.body(), error);
  if (!body) return ctx.reply(ctx.error(http::status::bad_request, error));
  domain_error err;
  auto start = parse_process_start(*body, *s, err);
  if (!start) return ctx.reply(ctx.error(err));
  const std::string joined = start->cmd.empty() ? start->op["argv"].dump() : start->cmd;
  nlohmann::ordered_json line = {{"sandbox_id", s->id},
                                 {"process_id", start->id},
                                 {"cmd_sha256", sha256_hex(joined)},
                                 {"cmd_bytes", joined.size()},
                                 {"pty", start->op["streams"].contains("pty")}};
  auto self = ctx.shared_from_this();
  s->touch();
  s->box->call(start->op, [this, self, line, id = start->id](const ctl::reply& r) mutable {
    line["outcome"] = r.ok ? "ok" : "not_started";
    audit(*self, "process.start", line);
    if (!r.ok)
      return self->reply(self->error(http::status::conflict, "The process could not start: " + r.error));
    self->reply(self->json(http::status::created, process_model(r.data)));
  });
}

void router::list_processes(context& ctx, const std::string& sandbox_id) {
  auto s = own_sandbox(ctx, sandbox_id);
  if (!s) return;
  ask_supervisor(ctx, s, {{"op", "processes"}}, "", [self = ctx.shared_from_this()](const json& data) {
    json out = json::array();
    for (const auto& p : data.value("processes", json::array()))
      out.push_back(process_model(p));
    self->reply(self->json(http::status::ok, out));
  });
}

void router::get_process(context& ctx, const std::string& sandbox_id, const std::string& id) {
  auto s = own_process(ctx, sandbox_id, id);
  if (!s) return;
  ask_supervisor(ctx, s, {{"op", "processes"}}, id, [self = ctx.shared_from_this(), id](const json& data) {
    for (const auto& p : data.value("processes", json::array()))
      if (p.value("id", "") == id) return self->reply(self->json(http::status::ok, process_model(p)));
    self->reply(self->not_found("Process does not exist: " + id, std::nullopt));
  });
}

void router::wait_process(context& ctx, const std::string& sandbox_id, const std::string& id) {
  auto s = own_process(ctx, sandbox_id, id);
  if (!s) return;
  double wait_s = default_wait_s;
  if (const auto it = ctx.query.find("timeout_s"); it != ctx.query.end()) {
    char* end = nullptr;
    wait_s = std::strtod(it->second.c_str(), &end);
    if (it->second.empty() || *end != '\0' || !(wait_s >= 0) || wait_s > max_wait_s)
      return ctx.reply(ctx.error(http::status::bad_request, "\"timeout_s\" must be a number from 0 to 3600"));
  }
  json op = {{"op", "wait"}, {"id", id}, {"timeout_ms", static_cast<std::uint64_t>(wait_s * 1000)}};
  ask_supervisor(ctx, s, std::move(op), id, [self = ctx.shared_from_this()](const json& data) {
    self->reply(self->json(http::status::ok, process_model(data)));
  });
}

void router::signal_process(context& ctx, const std::string& sandbox_id, const std::string& id) {
  auto s = own_process(ctx, sandbox_id, id);
  if (!s) return;
  std::string error;
  auto body = body_object(ctx.req.body(), error);
  if (!body) return ctx.reply(ctx.error(http::status::bad_request, error));
  const auto sig = signal_number(body->value("signal", json()));
  if (!sig)
    return ctx.reply(
        ctx.error(http::status::bad_request,
                  "\"signal\" must name a signal (INT, TERM, KILL, HUP, QUIT, USR1, USR2, ...) or be "
                  "its number"));
  // The process must be there: the supervisor's signal op names a running child.
  auto self = ctx.shared_from_this();
  ask_supervisor(
      ctx, s, {{"op", "signal"}, {"id", id}, {"signal", *sig}, {"group", true}}, id,
      [this, self, s, id, sig = *sig](const json&) {
        audit(*self, "process.signal", {{"sandbox_id", s->id}, {"process_id", id}, {"signal", sig}});
        self->reply(self->empty(http::status::no_content));
      });
}

void router::resize_process(context& ctx, const std::string& sandbox_id, const std::string& id) {
  auto s = own_process(ctx, sandbox_id, id);
  if (!s) return;
  std::string error;
  auto body = body_object(ctx.req.body(), error);
  if (!body) return ctx.reply(ctx.error(http::status::bad_request, error));
  const json cols = body->value("cols", json());
  const json rows = body->value("rows", json());
  if (!valid_terminal_size(cols) || !valid_terminal_size(rows))
    return ctx.reply(
        ctx.error(http::status::bad_request, "\"cols\" and \"rows\" must be integers from 1 to 10000"));
  ask_supervisor(
      ctx, s, {{"op", "resize"}, {"id", id}, {"cols", cols}, {"rows", rows}}, id,
      [self = ctx.shared_from_this()](const json&) { self->reply(self->empty(http::status::no_content)); });
}

void router::write_process_stdin(context& ctx, const std::string& sandbox_id, const std::string& id) {
  auto s = own_process(ctx, sandbox_id, id);
  if (!s) return;
  if (ctx.req.body().size() > max_stdin_request_bytes)
    return ctx.reply(
        ctx.error(http::status::payload_too_large,
                  "stdin is written at most 512 KiB a request (or through the attach WebSocket)"));
  const auto close = ctx.query.find("close");
  const bool closing = close != ctx.query.end() && (close->second == "true" || close->second == "1");
  json op = {
      {"op", "write_stdin"}, {"id", id}, {"data", ctl::base64_encode(ctx.req.body())}, {"close", closing}};
  ask_supervisor(ctx, s, std::move(op), id, [self = ctx.shared_from_this()](const json&) {
    self->reply(self->empty(http::status::no_content));
  });
}

void router::delete_process(context& ctx, const std::string& sandbox_id, const std::string& id) {
  auto s = own_process(ctx, sandbox_id, id);
  if (!s) return;
  auto self = ctx.shared_from_this();
  ask_supervisor(ctx, s, {{"op", "forget"}, {"id", id}}, id, [this, self, s, id](const json&) {
    audit(*self, "process.delete", {{"sandbox_id", s->id}, {"process_id", id}});
    self->reply(self->empty(http::status::no_content));
  });
}

void router::admit_process(const request& req,
                           std::function<void(std::variant<process_grant, response>)> done) {
  auto reject = [&](http::status st, std::string message) {
    done(error_response(st, std::move(message), req.version(), false));
  };
  auto t = parse_target(req.target(), cfg_.base_url);
  if (!t || t->segments.size() != 6 || t->segments[0] != "api" || t->segments[1] != "sandboxes" ||
      t->segments[3] != "processes" || t->segments[5] != "attach")
    return reject(http::status::not_found, "No WebSocket endpoint here");
  if (auto refusal = refuse_cross_origin(req)) return done(std::move(*refusal));
  principal who;
  if (auto r = authenticate(req, t->query.count("token") ? t->query["token"] : "", who)) {
    r->keep_alive(false);
    return done(std::move(*r));
  }
  const std::string& sandbox_id = t->segments[2];
  const std::string& id = t->segments[4];
  if (auto res = other_node(req, resource::sandbox, sandbox_id)) {
    res->keep_alive(false);
    return done(std::move(*res));
  }
  std::shared_ptr<sandbox_entry> s = is_uuid(sandbox_id) ? kernels_.sandboxes().find(sandbox_id) : nullptr;
  if (!s || s->pooled || !who.sees(s->owner))
    return reject(http::status::not_found, "Sandbox does not exist: " + sandbox_id);
  if (!valid_process_id(id)) return reject(http::status::not_found, "Process does not exist: " + id);
  json since = json::array({0, 0});
  for (const auto& [key, index] : {std::pair<const char*, int>{"since_stdout", 0}, {"since_stderr", 1}}) {
    const auto it = t->query.find(key);
    if (it == t->query.end()) continue;
    char* end = nullptr;
    const auto value = std::strtoull(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end != '\0' || it->second[0] == '-')
      return reject(http::status::bad_request, std::string("\"") + key + "\" must be a byte offset");
    since[index] = value;
  }
  s->touch();
  s->box->call({{"op", "attach"}, {"id", id}, {"since", since}},
               [this, s, id, who, done, version = req.version()](const ctl::reply& r) {
                 if (!r.ok) {
                   const auto err = supervisor_error(r, id);
                   return done(error_response(status_of(err.kind), err.message, version, false));
                 }
                 const int fd = r.data.value("fd", -1);
                 std::string error;
                 auto copy = s->box->copy_descriptor(fd, error);
                 s->box->call({{"op", "release_fd"}, {"fd", fd}}, nullptr);
                 if (!copy) return done(error_response(http::status::conflict, error, version, false));
                 audit_.record("process.attach", who.name, {{"sandbox_id", s->id}, {"process_id", id}});
                 done(process_grant{s, id, std::move(copy), who.name});
               });
}

}  // namespace sandgate::gateway
