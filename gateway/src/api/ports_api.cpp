// Ports of sandboxes: what a program in a sandbox serves on 127.0.0.1:<port>
// there, reached through the gateway by host name ({port}-{sandbox id}.{--ports-domain})
// or by path (/api/sandboxes/{id}/ports/{port}/...). A request is let through
// with the owner's token (a header, stripped before it goes on), or with a
// signed URL's token for that sandbox and port (port_urls), which a browser
// trades at once for a cookie of that host (or path) alone. The HTTP layer
// relays (http/port_exchange); here is who may, and where to.
#include "router.hpp"

#include "../http/cookies.hpp"
#include "../util/metrics.hpp"

#include <gateway/ids.hpp>
#include <jupyter_protocol/message.hpp>

#include <boost/url.hpp>

#include <charconv>

namespace sandgate::gateway {
namespace http = boost::beast::http;
using json = nlohmann::json;
namespace ctl = sandboxing::control;

namespace {

constexpr std::string_view token_parameter = "sandgate_port_token";
constexpr std::string_view cookie_name = "sandgate_port";
constexpr std::uint64_t default_url_ttl_s = 3600;
constexpr std::uint64_t max_url_ttl_s = 7 * 24 * 3600;

std::optional<std::uint16_t> port_number(std::string_view text) {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty() || text[0] == '0' || value == 0 ||
      value > 65535)
    return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The value of cookie `name` in a Cookie header, or "".
std::string cookie_value(std::string_view cookies, std::string_view name) {
  std::string value;
  bool found = false;
  for_each_cookie(cookies, [&](std::string_view n, std::string_view v, std::string_view) {
    if (n == name && !found) {
      value = v;
      found = true;
    }
  });
  return value;
}

}  // namespace

std::optional<router::port_target> router::port_target_of(const http::request_header<>& header) const {
  // By host name: {port}-{sandbox id}.{ports domain}[:gateway port]
  if (!cfg_.ports_domain.empty()) {
    std::string host = lower(header[http::field::host]);
    if (const auto colon = host.rfind(':'); colon != std::string::npos && host.find(']') == std::string::npos)
      host.resize(colon);
    const std::string suffix = "." + lower(cfg_.ports_domain);
    if (host.size() > suffix.size() && host.ends_with(suffix)) {
      const std::string label = host.substr(0, host.size() - suffix.size());
      const auto dash = label.find('-');
      if (dash != std::string::npos && label.find('.') == std::string::npos) {
        port_target t;
        t.sandbox_id = label.substr(dash + 1);
        t.valid_port = port_number(std::string_view(label).substr(0, dash));
        t.port = t.valid_port.value_or(0);
        t.target = std::string(header.target());
        return t;
      }
    }
  }
  // By path: {base}api/sandboxes/{id}/ports/{port}[/rest]
  const std::string_view raw = header.target();
  const std::string prefix = cfg_.base_url + "api/sandboxes/";
  if (!raw.starts_with(prefix)) return std::nullopt;
  const auto path_end = raw.find('?');
  const std::string_view path = raw.substr(0, path_end);
  const auto id_end = path.find('/', prefix.size());
  if (id_end == std::string_view::npos || path.substr(id_end, 7) != "/ports/") return std::nullopt;
  const auto port_start = id_end + 7;
  const auto port_end = path.find('/', port_start);
  const auto port_text = path.substr(
      port_start, port_end == std::string_view::npos ? std::string_view::npos : port_end - port_start);
  if (port_text.empty() || port_text.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  port_target t;
  t.sandbox_id = std::string(path.substr(prefix.size(), id_end - prefix.size()));
  t.valid_port = port_number(port_text);
  t.port = t.valid_port.value_or(0);
  t.prefix = std::string(path.substr(0, port_end == std::string_view::npos ? path.size() : port_end));
  if (port_end == std::string_view::npos) {
    t.target = "";  // the prefix without its slash: redirected to it with one
  } else {
    t.target = std::string(raw.substr(port_end));
  }
  return t;
}

std::variant<router::port_grant, router::response> router::admit_port(const http::request_header<>& header,
                                                                      const port_target& t, bool tls) {
  const request req{http::request_header<>(header)};
  auto fail = [&](http::status st, std::string reason, std::string message) {
    auto res = error_response_with_reason(st, std::move(reason), std::move(message), req.version(),
                                          req.keep_alive());
    return res;
  };
  if (!t.valid_port) return fail(http::status::bad_request, "bad_port", "A port is a number from 1 to 65535");
  std::shared_ptr<sandbox_entry> s =
      is_uuid(t.sandbox_id) ? kernels_.sandboxes().find(t.sandbox_id) : nullptr;
  if (s && s->pooled) s = nullptr;
  // Who may: the owner's token in a header, or the port's signed token (query, then cookie).
  port_grant grant;
  std::string query_token;
  std::string target = t.target;
  {
    const auto q = target.find('?');
    if (q != std::string::npos) {
      auto params = boost::urls::parse_query(std::string_view(target).substr(q + 1));
      if (params) {
        std::string rest;
        for (const auto& p : *params) {
          if (p.key == token_parameter) {
            query_token = p.value;
          } else {
            rest += (rest.empty() ? "" : "&") + std::string(p.key) +
                    (p.has_value ? "=" + std::string(p.value) : "");
          }
        }
        target = target.substr(0, q) + (rest.empty() ? "" : "?" + rest);
      }
    }
  }
  const auto now = unix_now();
  const bool signed_ok = s && !query_token.empty() && port_urls_->valid(query_token, s->id, t.port, now);
  const std::string cookie = cookie_value(req[http::field::cookie], cookie_name);
  const bool cookie_ok = s && !cookie.empty() && port_urls_->valid(cookie, s->id, t.port, now);
  if (!signed_ok && !cookie_ok) {
    if (req[http::field::authorization].empty())
      return fail(http::status::unauthorized, "port_token_required",
                  "A token is required: the owner's in an Authorization header, or a signed URL of this port "
                  "(POST /api/sandboxes/{id}/port-urls)");
    principal who;
    if (auto r = authenticate(req, "", who)) return std::move(*r);
    if (!s || !who.sees(s->owner))
      return fail(http::status::not_found, "not_found", "Sandbox does not exist: " + t.sandbox_id);
    grant.principal = who.name;
    grant.rewrite.strip_authorization = true;
  } else {
    grant.principal = s->owner;
  }
  if (!s) return fail(http::status::not_found, "not_found", "Sandbox does not exist: " + t.sandbox_id);
  if (t.target.empty()) {  // /…/ports/3000 → /…/ports/3000/, so the page's relative links resolve below it
    response res{http::status::permanent_redirect, req.version()};
    res.set(
        http::field::location,
        t.prefix + "/" + (query_token.empty() ? "" : "?" + std::string(token_parameter) + "=" + query_token));
    res.keep_alive(req.keep_alive());
    res.prepare_payload();
    return res;
  }
  // A browser's navigation trades the token for a cookie of this host (or this port's path) alone, and
  // the URL is cleaned of it; other clients (a program, a WebSocket) may send it with every request.
  const auto mode = req["Sec-Fetch-Mode"];
  const bool navigation = mode == "navigate" || (mode.empty() && req[http::field::accept].find("text/html") !=
                                                                     boost::beast::string_view::npos);
  if (signed_ok && navigation && (req.method() == http::verb::get || req.method() == http::verb::head) &&
      req.find(http::field::upgrade) == req.end()) {
    const auto expires = query_token.substr(0, query_token.find('.'));
    const auto max_age = std::max<std::int64_t>(0, std::stoll(expires) - now);
    response res{http::status::see_other, req.version()};
    res.set(http::field::location, t.prefix + target);
    res.set(http::field::set_cookie, std::string(cookie_name) + "=" + query_token +
                                         "; Max-Age=" + std::to_string(max_age) +
                                         "; Path=" + (t.prefix.empty() ? "/" : t.prefix + "/") +
                                         "; HttpOnly; SameSite=Lax" + (tls ? "; Secure" : ""));
    res.set(http::field::cache_control, "no-store");
    res.keep_alive(req.keep_alive());
    res.prepare_payload();
    return res;
  }
  grant.sandbox = s;
  grant.port = t.port;
  grant.rewrite.target = target;
  grant.rewrite.strip_cookie = std::string(cookie_name);
  grant.rewrite.forwarded_proto = tls ? "https" : "http";
  grant.rewrite.forwarded_prefix = t.prefix;
  s->touch();
  return grant;
}

void router::note_port_connection(const port_grant& g, const std::string& outcome,
                                  const std::string& client) {
  ++gateway_metrics().port_connections[outcome];
  audit_.record("port.connect", g.principal,
                {{"sandbox_id", g.sandbox->id}, {"port", g.port}, {"outcome", outcome}, {"client", client}});
}

void router::list_ports(context& ctx, const std::string& sandbox_id) {
  auto s = own_sandbox(ctx, sandbox_id);
  if (!s) return;
  s->touch();
  auto self = ctx.shared_from_this();
  s->box->call({{"op", "listening_ports"}}, [self](const ctl::reply& r) {
    if (!r.ok) return self->reply(self->error(http::status::conflict, r.error));
    self->reply(self->json(http::status::ok, r.data.value("ports", json::array())));
  });
}

void router::post_port_url(context& ctx, const std::string& sandbox_id) {
  auto s = own_sandbox(ctx, sandbox_id);
  if (!s) return;
  std::string error;
  auto body = body_object(ctx.req.body(), error);
  if (!body) return ctx.reply(ctx.error(http::status::bad_request, error));
  const json port = body->value("port", json());
  if (!port.is_number_unsigned() || port.get<std::uint64_t>() < 1 || port.get<std::uint64_t>() > 65535)
    return ctx.reply(ctx.error(http::status::bad_request, "\"port\" must be a port number from 1 to 65535"));
  const json ttl = body->value("ttl_s", json(default_url_ttl_s));
  if (!ttl.is_number_unsigned() || ttl.get<std::uint64_t>() < 1 || ttl.get<std::uint64_t>() > max_url_ttl_s)
    return ctx.reply(ctx.error(http::status::bad_request, "\"ttl_s\" must be from 1 to 604800 (a week)"));
  const std::string route_kind =
      body->value("route", std::string(cfg_.ports_domain.empty() ? "path" : "host"));
  if (route_kind != "host" && route_kind != "path")
    return ctx.reply(ctx.error(http::status::bad_request, "\"route\" must be \"host\" or \"path\""));
  if (route_kind == "host" && cfg_.ports_domain.empty())
    return ctx.reply(ctx.error(http::status::conflict, "The host-name route is off (--ports-domain '')"));
  const auto p = static_cast<std::uint16_t>(port.get<std::uint64_t>());
  const std::int64_t expires_at = unix_now() + static_cast<std::int64_t>(ttl.get<std::uint64_t>());
  const std::string token = port_urls_->token(s->id, p, expires_at);
  // The gateway as the caller reached it: its scheme and host:port.
  const std::string scheme = cfg_.certfile.empty() ? "http" : "https";
  std::string authority(ctx.req[http::field::host]);
  if (authority.empty()) authority = cfg_.ip + ":" + std::to_string(cfg_.port);
  std::string url;
  std::string base;
  if (route_kind == "host") {
    const auto colon = authority.rfind(':');
    const std::string gateway_port =
        colon != std::string::npos && authority.find(']') == std::string::npos ? authority.substr(colon) : "";
    base = scheme + "://" + std::to_string(p) + "-" + s->id + "." + cfg_.ports_domain + gateway_port + "/";
  } else {
    base = scheme + "://" + authority + cfg_.base_url + "api/sandboxes/" + s->id + "/ports/" +
           std::to_string(p) + "/";
  }
  url = base + "?" + std::string(token_parameter) + "=" + token;
  audit(ctx, "port.url",
        {{"sandbox_id", s->id}, {"port", p}, {"route", route_kind}, {"expires_at", expires_at}});
  const auto expires = std::chrono::system_clock::time_point(std::chrono::seconds(expires_at));
  ctx.reply(ctx.json(http::status::created, {{"url", url},
                                             {"base_url", base},
                                             {"token", token},
                                             {"port", p},
                                             {"route", route_kind},
                                             {"expires_at", protocol::iso8601(expires)}}));
}

}  // namespace sandgate::gateway
