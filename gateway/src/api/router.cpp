#include "router.hpp"

#include "../util/metrics.hpp"

#include <gateway/ids.hpp>
#include <gateway/log.hpp>

#include <boost/beast/websocket.hpp>
#include <boost/url.hpp>
#include <nlohmann/json.hpp>

namespace sandgate::gateway {
namespace http = boost::beast::http;
using json = nlohmann::json;

std::optional<request_target> parse_target(std::string_view raw, std::string_view base_url) {
  auto parsed = boost::urls::parse_origin_form(raw);
  if (!parsed) return std::nullopt;
  const std::string path = parsed->path();  // percent-decoded
  if (path.compare(0, base_url.size(), base_url) != 0 && path + "/" != base_url) return std::nullopt;
  request_target t;
  std::string rest = path.size() > base_url.size() ? path.substr(base_url.size()) : "";
  std::size_t start = 0;
  while (start <= rest.size()) {
    auto end = rest.find('/', start);
    if (end == std::string::npos) end = rest.size();
    if (end > start) t.segments.push_back(rest.substr(start, end - start));
    start = end + 1;
  }
  for (const auto& p : parsed->params())
    t.query[p.key] = p.value;
  return t;
}

namespace {

// The target's path without its query (which may hold a token), at most 1 KiB.
std::string path_of(std::string_view target) {
  return std::string(target.substr(0, std::min<std::size_t>(target.find('?'), 1024)));
}

}  // namespace

router::router(const config& cfg, kernel_manager& kernels, registry& reg, std::string token, audit_log& audit,
               const std::filesystem::path& openapi_file, peer_directory& peers)
    : cfg_(cfg),
      kernels_(kernels),
      peers_(peers),
      sessions_(reg),
      auth_(std::move(token), cfg.tokens_file),
      audit_(audit),
      execution_audit_(std::make_shared<execution_audit>(kernels.io(), audit)),
      openapi_(load_openapi_document(openapi_file, cfg.base_url)),
      port_urls_(std::make_unique<port_urls>(cfg.state_dir / "port-url.key")),
      mcp_(std::make_unique<mcp_server>()) {
  for (const auto& k : kernels_.list())  // taken back from an earlier gateway
    watch(k);
  sessions_.restore([this](const std::string& kernel_id) { return kernels_.find(kernel_id) != nullptr; });
}

const std::shared_ptr<kernel>& router::watch(const std::shared_ptr<kernel>& k) {
  auto touch = [this, sandbox_id = k->sandbox_id()] {
    if (auto s = kernels_.sandboxes().find(sandbox_id)) s->touch();
  };
  touch();  // a kernel that became ready is activity too
  execution_audit_->watch(*k, touch);
  return k;
}

void router::audit(const context& ctx, std::string_view event, const nlohmann::ordered_json& fields) const {
  audit_.record(event, ctx.who.name, fields);
}

router::response router::error_response(http::status status, std::string message, unsigned version,
                                        bool keep_alive) {
  return error_response_with_reason(status, std::string(http::obsolete_reason(status)), std::move(message),
                                    version, keep_alive);
}

router::response router::error_response_with_reason(http::status status, std::string reason,
                                                    std::string message, unsigned version, bool keep_alive) {
  response res{status, version};
  res.set(http::field::server, "sandgate");
  res.set(http::field::content_type, "application/json");
  res.keep_alive(keep_alive);
  res.body() = json{{"reason", std::move(reason)}, {"message", std::move(message)}}.dump();
  res.prepare_payload();
  return res;
}

router::response router::context::json(http::status status, const nlohmann::json& body) const {
  response res{status, req.version()};
  res.set(http::field::server, "sandgate");
  res.set(http::field::content_type, "application/json");
  res.keep_alive(req.keep_alive());
  res.body() = body.dump();
  return res;
}

router::response router::context::error(http::status status, std::string message) const {
  return error_response(status, std::move(message), req.version(), req.keep_alive());
}

http::status status_of(fault kind) {
  switch (kind) {
    case fault::invalid:
      return http::status::bad_request;
    case fault::forbidden:
      return http::status::forbidden;
    case fault::not_found:
      return http::status::not_found;
    case fault::conflict:
      return http::status::conflict;
    case fault::too_large:
      return http::status::payload_too_large;
    case fault::over_quota:
      return http::status::too_many_requests;
    case fault::at_capacity:  // a balancer sends the request to another node
      return http::status::service_unavailable;
    case fault::internal:
      break;
  }
  return http::status::internal_server_error;
}

router::response router::context::error(const domain_error& err) const {
  const auto status = status_of(err.kind);
  auto res = error_response_with_reason(
      status, err.reason.empty() ? std::string(http::obsolete_reason(status)) : err.reason, err.message,
      req.version(), req.keep_alive());
  if (err.kind == fault::at_capacity) res.set(http::field::retry_after, "1");
  return res;
}

router::response router::context::not_found(std::string message,
                                            const std::optional<std::string>& gone) const {
  if (!gone) return error(http::status::not_found, std::move(message));
  return error(domain_error{fault::not_found, message + " (" + *gone + ")", *gone});
}

router::response router::context::empty(http::status status) const {
  response res{status, req.version()};
  res.set(http::field::server, "sandgate");
  res.keep_alive(req.keep_alive());
  return res;
}

void router::add_cors(const request& req, boost::beast::http::fields& res) const {
  if (cfg_.allow_origin.empty()) return;
  const auto origin = req[http::field::origin];
  if (cfg_.allow_origin == "*" || origin == cfg_.allow_origin) {
    res.set(http::field::access_control_allow_origin, cfg_.allow_origin == "*" ? "*" : std::string(origin));
    res.set(http::field::access_control_allow_credentials, "true");
    res.set(http::field::vary, "Origin");
  }
}

std::optional<router::response> router::authenticate(const request& req, const std::string& query_token,
                                                     principal& who) {
  switch (auth_.check(req[http::field::authorization], query_token, who)) {
    case auth_result::ok:
      return std::nullopt;
    case auth_result::missing: {
      auto res =
          error_response(http::status::unauthorized, "A token is required (Authorization: token <token>)",
                         req.version(), req.keep_alive());
      res.set(http::field::www_authenticate, "token");
      log::warn("auth_failed", {{"why", "missing"}, {"target", path_of(req.target())}});
      ++gateway_metrics().auth_failures;
      audit_.record("auth.failure", std::nullopt,
                    {{"why", "missing"},
                     {"method", std::string(req.method_string())},
                     {"path", path_of(req.target())}});
      return res;
    }
    case auth_result::wrong:
      log::warn("auth_failed", {{"why", "wrong token"}});
      ++gateway_metrics().auth_failures;
      audit_.record("auth.failure", std::nullopt,
                    {{"why", "wrong token"},
                     {"method", std::string(req.method_string())},
                     {"path", path_of(req.target())}});
      return error_response(http::status::forbidden, "Invalid token", req.version(), req.keep_alive());
  }
  return std::nullopt;
}

void router::context::reply(response&& res) {
  if (req.method() == http::verb::head && !res.body().empty()) {
    // The headers a GET would get, without the body (a listing, an error).
    res.prepare_payload();
    const std::string length(res[http::field::content_length]);
    res.body().clear();
    res.set(http::field::content_length, length);
  }
  reply_body(std::move(res));
}

bool router::prepare(context& ctx) {
  auto t = parse_target(ctx.req.target(), cfg_.base_url);
  if (!t) {
    ctx.reply(ctx.error(http::status::not_found, "No such path"));
    return false;
  }
  ctx.parts = std::move(t->segments);
  ctx.query = std::move(t->query);
  if (ctx.req.method() == http::verb::options) {
    auto res = ctx.empty(http::status::no_content);
    res.set(http::field::access_control_allow_methods, "GET, POST, PATCH, PUT, DELETE, OPTIONS");
    res.set(http::field::access_control_allow_headers, "Authorization, Content-Type, X-XSRFToken, Range");
    ctx.reply(std::move(res));
    return false;
  }
  // A balancer's health check: no token, and nothing said but that the node serves.
  if (ctx.parts.size() == 1 && ctx.parts[0] == "health" && ctx.req.method() == http::verb::get) {
    auto res = ctx.json(http::status::ok, {{"status", "ok"}});
    ctx.reply(std::move(res));
    return false;
  }
  const auto token = ctx.query.count("token") ? ctx.query["token"] : std::string();
  if (auto rejection = authenticate(ctx.req, token, ctx.who)) {
    if (ctx.parts.size() == 1 && ctx.parts[0] == "mcp") as_mcp_refusal(*rejection);
    ctx.reply(std::move(*rejection));
    return false;
  }
  return true;
}

std::optional<router::response> router::refuse_before_body(const http::request_header<>& header) {
  const request req{http::request_header<>(header)};
  auto t = parse_target(req.target(), cfg_.base_url);
  if (!t || req.method() == http::verb::options) return std::nullopt;  // answered without a token anyway
  if (t->segments.size() == 1 && t->segments[0] == "health") return std::nullopt;
  principal who;
  auto refusal = authenticate(req, t->query.count("token") ? t->query["token"] : std::string(), who);
  if (!refusal) return std::nullopt;
  if (t->segments.size() == 1 && t->segments[0] == "mcp") as_mcp_refusal(*refusal);
  add_cors(req, refusal->base());
  refusal->keep_alive(false);
  refusal->prepare_payload();
  return refusal;
}

void router::handle(request&& req, responder respond) {
  auto ctx = std::make_shared<context>();
  ctx->owner = this;
  ctx->req = std::move(req);
  ctx->respond = std::move(respond);
  try {
    if (!prepare(*ctx)) return;
    dispatch(*ctx);
  } catch (const std::exception& e) {
    log::error("request_failed", {{"target", std::string(ctx->req.target())}, {"error", e.what()}});
    ctx->reply(ctx->error(http::status::internal_server_error, "Internal error"));
  }
}

std::optional<router::response> router::refuse_cross_origin(const request& req) const {
  const auto origin = req[http::field::origin];
  if (origin.empty() || cfg_.allow_origin == "*" || origin == cfg_.allow_origin) return std::nullopt;
  const auto host = std::string(req[http::field::host]);
  const auto scheme_end = origin.find("://");
  if (scheme_end != std::string::npos && origin.substr(scheme_end + 3) == host) return std::nullopt;
  return error_response(http::status::forbidden, "Cross-origin WebSocket refused: " + std::string(origin),
                        req.version(), false);
}

bool router::is_process_attach(const request& req) const {
  const auto t = parse_target(req.target(), cfg_.base_url);
  return t && t->segments.size() == 6 && t->segments[0] == "api" && t->segments[1] == "sandboxes" &&
         t->segments[3] == "processes" && t->segments[5] == "attach";
}

std::variant<router::channels_grant, router::response> router::admit_channels(const request& req) {
  auto t = parse_target(req.target(), cfg_.base_url);
  auto reject = [&](http::status s, std::string msg) {
    return error_response(s, std::move(msg), req.version(), false);
  };
  if (!t || t->segments.size() != 4 || t->segments[0] != "api" || t->segments[1] != "kernels" ||
      t->segments[3] != "channels")
    return reject(http::status::not_found, "No WebSocket endpoint here");
  if (auto refusal = refuse_cross_origin(req)) return std::move(*refusal);
  principal who;
  if (auto r = authenticate(req, t->query.count("token") ? t->query["token"] : "", who)) {
    r->keep_alive(false);
    return std::move(*r);
  }
  if (auto res = other_node(req, resource::kernel, t->segments[2])) {
    res->keep_alive(false);
    return std::move(*res);
  }
  auto k = kernels_.find(t->segments[2]);
  if (!k || !who.sees(k->owner())) {
    const auto gone = k ? std::nullopt : kernels_.sandboxes().gone(t->segments[2]);
    auto res = reject(http::status::not_found, "Kernel does not exist: " + t->segments[2]);
    if (gone) {
      res.body() = nlohmann::json{
          {"reason", *gone},
          {"message",
           "Kernel does not exist: " + t->segments[2] + " (" + *gone +
               ")"}}.dump();
      res.prepare_payload();
    }
    return res;
  }
  bool v1 = false;
  const auto offered = req[http::field::sec_websocket_protocol];
  for (std::size_t start = 0; start < offered.size();) {
    auto end = offered.find(',', start);
    if (end == std::string::npos) end = offered.size();
    auto item = offered.substr(start, end - start);
    while (!item.empty() && item.front() == ' ')
      item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ')
      item.remove_suffix(1);
    if (item == protocol::v1_subprotocol) v1 = true;
    start = end + 1;
  }
  const std::string session_id = t->query.count("session_id") ? t->query["session_id"] : "";
  audit_.record("kernel.connect", who.name,
                {{"kernel_id", k->id()}, {"sandbox_id", k->sandbox_id()}, {"owner", k->owner()}});
  return channels_grant{std::move(k), session_id, who.name, v1, &kernels_.memory()};
}

}  // namespace sandgate::gateway
