// /api/sandboxes: sandboxes with a TTL, metadata and limits (docs/api.md).
#include "router.hpp"

#include <gateway/ids.hpp>
#include <jupyter_protocol/message.hpp>

#include <boost/url.hpp>
#include <nlohmann/json.hpp>

namespace sandgate::gateway {
namespace http = boost::beast::http;
using json = nlohmann::json;

namespace {

std::string unix_iso8601(std::int64_t unix_s) {
  return protocol::iso8601(std::chrono::system_clock::time_point(std::chrono::seconds(unix_s)));
}

// ?metadata.KEY=VALUE filters from the raw query string.
std::map<std::string, std::string> metadata_filters(const std::map<std::string, std::string>& query) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : query)
    if (k.rfind("metadata.", 0) == 0) out[k.substr(9)] = v;
  return out;
}

}  // namespace

json router::sandbox_model(const sandbox_entry& s) const {
  json kernels = json::array();
  for (const auto& id : s.kernels)
    if (auto k = kernels_.find(id)) kernels.push_back(kernel_model(*k));
  return {{"id", s.id},
          {"created", protocol::iso8601(s.created)},
          {"expires_at", unix_iso8601(s.expires_at)},
          {"idle_timeout_s", s.idle_timeout_s},
          {"max_execution_s", s.max_execution_s},
          {"last_activity", protocol::iso8601(s.last_activity_wall)},
          {"metadata", s.metadata},
          {"limits",
           {{"memory_bytes", s.limits.memory_bytes},
            {"cpu", s.limits.cpu},
            {"pids", s.limits.pids},
            {"workspace_bytes", s.limits.workspace_bytes}}},
          {"network", sandboxing::to_json(s.network)},
          {"kernels", kernels}};
}

std::shared_ptr<sandbox_entry> router::own_sandbox(context& ctx, const std::string& id) {
  auto s = is_uuid(id) ? kernels_.sandboxes().find(id) : nullptr;
  if (s && s->pooled) s = nullptr;  // a warm pool's: nobody's yet
  if (!s || !ctx.who.sees(s->owner)) {
    ctx.reply(
        ctx.not_found("Sandbox does not exist: " + id, s ? std::nullopt : kernels_.sandboxes().gone(id)));
    return nullptr;
  }
  return s;
}

void router::post_sandbox(context& ctx) {
  std::string error;
  auto body = body_object(ctx.req.body(), error);
  if (!body) return ctx.reply(ctx.error(http::status::bad_request, error));
  auto settings = sandbox_settings::from_json(*body, error);
  if (!settings) return ctx.reply(ctx.error(http::status::bad_request, error));
  domain_error err;
  auto s = kernels_.create_sandbox(*settings, ctx.who, err);
  if (!s) return ctx.reply(ctx.error(err));
  auto self = ctx.shared_from_this();
  kernels_.sandboxes().when_ready(s, [this, self, s](const std::string& failure) {
    if (!failure.empty()) {
      kernels_.sandboxes().destroy(s->id, "failed");
      return self->reply(
          self->error(http::status::internal_server_error, "The sandbox failed to start: " + failure));
    }
    audit(*self, "sandbox.create",
          {{"sandbox_id", s->id},
           {"expires_at", unix_iso8601(s->expires_at)},
           {"idle_timeout_s", s->idle_timeout_s},
           {"limits",
            {{"memory_bytes", s->limits.memory_bytes},
             {"cpu", s->limits.cpu},
             {"pids", s->limits.pids},
             {"workspace_bytes", s->limits.workspace_bytes}}},
           {"network", sandboxing::to_json(s->network)},
           {"metadata", s->metadata}});
    auto res = self->json(http::status::created, sandbox_model(*s));
    res.set(http::field::location, cfg_.base_url + "api/sandboxes/" + s->id);
    self->reply(std::move(res));
  });
}

void router::list_sandboxes(context& ctx) {
  const auto filters = metadata_filters(ctx.query);
  json out = json::array();
  for (const auto& s : kernels_.sandboxes().list()) {
    if (!ctx.who.sees(s->owner)) continue;
    bool match = true;
    for (const auto& [k, v] : filters)
      if (auto it = s->metadata.find(k); it == s->metadata.end() || it->second != v) match = false;
    if (match) out.push_back(sandbox_model(*s));
  }
  reply_list(ctx, "api/sandboxes", std::move(out));
}

void router::get_sandbox(context& ctx, const std::string& id) {
  if (auto s = own_sandbox(ctx, id)) ctx.reply(ctx.json(http::status::ok, sandbox_model(*s)));
}

void router::patch_sandbox(context& ctx, const std::string& id) {
  auto s = own_sandbox(ctx, id);
  if (!s) return;
  std::string error;
  auto body = body_object(ctx.req.body(), error);
  if (!body) return ctx.reply(ctx.error(http::status::bad_request, error));
  for (const auto& [k, v] : body->items())
    if (k != "ttl_s") return ctx.reply(ctx.error(http::status::bad_request, "Only \"ttl_s\" can be changed"));
  if (!body->contains("ttl_s") || !(*body)["ttl_s"].is_number_unsigned() ||
      (*body)["ttl_s"].get<std::uint64_t>() == 0)
    return ctx.reply(ctx.error(http::status::bad_request, "\"ttl_s\" must be a positive integer"));
  s->touch();
  auto self = ctx.shared_from_this();
  kernels_.sandboxes().extend(
      s, (*body)["ttl_s"].get<std::uint64_t>(), [this, self, s](std::optional<domain_error> err) {
        if (err) return self->reply(self->error(*err));
        audit(*self, "sandbox.update", {{"sandbox_id", s->id}, {"expires_at", unix_iso8601(s->expires_at)}});
        self->reply(self->json(http::status::ok, sandbox_model(*s)));
      });
}

void router::patch_sandbox_network(context& ctx, const std::string& id) {
  auto s = own_sandbox(ctx, id);
  if (!s) return;
  // The body is the network value itself, or {"network": value}.
  json body = json::parse(ctx.req.body(), nullptr, false);
  if (body.is_discarded() || (!body.is_object() && !body.is_string()))
    return ctx.reply(ctx.error(http::status::bad_request, "The body must be a network mode or object"));
  if (body.is_object() && body.size() == 1 && body.contains("network")) body = json(body["network"]);
  s->touch();
  if (auto err = kernels_.sandboxes().set_network(s, body)) return ctx.reply(ctx.error(*err));
  audit(ctx, "sandbox.network", {{"sandbox_id", s->id}, {"network", sandboxing::to_json(s->network)}});
  ctx.reply(ctx.json(http::status::ok, sandbox_model(*s)));
}

void router::delete_sandbox(context& ctx, const std::string& id) {
  auto s = own_sandbox(ctx, id);
  if (!s) return;
  for (const auto& k : s->kernels)
    sessions_.forget_kernel(k);
  audit(ctx, "sandbox.delete", {{"sandbox_id", id}, {"owner", s->owner}, {"kernel_ids", s->kernels}});
  auto self = ctx.shared_from_this();
  kernels_.delete_sandbox(id, [self] { self->reply(self->empty(http::status::no_content)); });
}

}  // namespace sandgate::gateway
