// /api/sessions: create, list, get, patch and delete, as jupyter_server does.
#include "router.hpp"

#include "../util/json_input.hpp"

#include <gateway/ids.hpp>

#include <nlohmann/json.hpp>

namespace sandgate::gateway {
namespace http = boost::beast::http;
using json = nlohmann::json;

namespace {

std::optional<json> object_body(const std::string& body) {
  auto j = parse_json(body);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

std::string string_field(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

json router::session_model(const session_record& s) const {
  json kernel_json = nullptr;
  if (auto k = kernels_.find(s.kernel_id)) kernel_json = kernel_model(*k);
  return {{"id", s.id},     {"path", s.path},        {"name", s.name},
          {"type", s.type}, {"kernel", kernel_json}, {"notebook", {{"path", s.path}, {"name", s.name}}}};
}

void router::list_sessions(context& ctx) {
  json out = json::array();
  for (const auto& s : sessions_.list()) {
    if (!kernels_.find(s.kernel_id)) {  // its kernel ended without an API call (culled, expired, lost)
      sessions_.erase(s.id);
      continue;
    }
    if (ctx.who.sees(s.owner)) out.push_back(session_model(s));
  }
  reply_list(ctx, "api/sessions", std::move(out));
}

void router::get_session(context& ctx, const std::string& id) {
  auto* s = sessions_.find(id);
  if (s && !kernels_.find(s->kernel_id)) {  // as jupyter_server: a session ends with its kernel
    sessions_.erase(id);
    s = nullptr;
  }
  if (!s || !ctx.who.sees(s->owner))
    return ctx.reply(ctx.error(http::status::not_found, "Session not found: " + id));
  ctx.reply(ctx.json(http::status::ok, session_model(*s)));
}

void router::post_session(context& ctx) {
  auto body = object_body(ctx.req.body());
  if (!body) return ctx.reply(ctx.error(http::status::bad_request, "Malformed JSON in the request body"));
  session_record rec;
  rec.path = string_field(*body, "path");
  if (rec.path.empty() && body->contains("notebook") && (*body)["notebook"].is_object())
    rec.path = string_field((*body)["notebook"], "path");
  if (rec.path.empty()) return ctx.reply(ctx.error(http::status::bad_request, "\"path\" is required"));
  rec.name = string_field(*body, "name");
  rec.type = string_field(*body, "type");
  rec.owner = ctx.who.name;
  if (auto* existing = sessions_.find_by_path(rec.path, rec.owner)) {
    if (kernels_.find(existing->kernel_id))
      return ctx.reply(ctx.json(http::status::created, session_model(*existing)));
    sessions_.erase(existing->id);  // its kernel ended: the path gets a new session
  }
  const json kernel_req =
      body->contains("kernel") && (*body)["kernel"].is_object() ? (*body)["kernel"] : json::object();
  rec.id = new_id(cfg_.node_id);
  const std::string kernel_id = string_field(kernel_req, "id");
  auto self = ctx.shared_from_this();
  auto finish = [this, self, rec](const std::string& kid) mutable {
    rec.kernel_id = kid;
    sessions_.put(rec);
    auto res = self->json(http::status::created, session_model(rec));
    res.set(http::field::location, cfg_.base_url + "api/sessions/" + rec.id);
    self->reply(std::move(res));
  };
  if (!kernel_id.empty()) {
    if (auto res = other_node(ctx.req, resource::kernel, kernel_id)) return ctx.reply(std::move(*res));
    auto k = own_kernel(ctx, kernel_id);
    if (k) finish(k->id());
    return;
  }
  kernels_.start_kernel(string_field(kernel_req, "name"), {}, ctx.who, "",
                        [this, self, finish, session_id = rec.id](const std::shared_ptr<kernel>& k,
                                                                  std::optional<domain_error> err) mutable {
                          if (err) return self->reply(self->error(*err));
                          watch(k);
                          audit_session_kernel(*self, *k, session_id);
                          finish(k->id());
                        });
}

// A kernel a session started, in a sandbox of its own.
void router::audit_session_kernel(const context& ctx, const kernel& k, const std::string& session_id) const {
  audit(ctx, "kernel.create",
        {{"kernel_id", k.id()},
         {"kernel_name", k.name()},
         {"sandbox_id", k.sandbox_id()},
         {"implicit_sandbox", true},
         {"session_id", session_id}});
}

void router::patch_session(context& ctx, const std::string& id) {
  auto* s = sessions_.find(id);
  if (!s || !ctx.who.sees(s->owner))
    return ctx.reply(ctx.error(http::status::not_found, "Session not found: " + id));
  auto body = object_body(ctx.req.body());
  if (!body) return ctx.reply(ctx.error(http::status::bad_request, "Malformed JSON in the request body"));
  if (auto p = string_field(*body, "path"); !p.empty()) s->path = p;
  if (body->contains("name")) s->name = string_field(*body, "name");
  if (body->contains("type")) s->type = string_field(*body, "type");
  const json kernel_req =
      body->contains("kernel") && (*body)["kernel"].is_object() ? (*body)["kernel"] : json::object();
  const std::string kid = string_field(kernel_req, "id");
  if (!kid.empty()) {
    if (auto res = other_node(ctx.req, resource::kernel, kid)) return ctx.reply(std::move(*res));
    if (!own_kernel(ctx, kid)) return;
    s->kernel_id = kid;
  }
  sessions_.put(*s);
  if (auto kname = string_field(kernel_req, "name"); kid.empty() && !kname.empty()) {
    auto current = kernels_.find(s->kernel_id);
    if (!current || current->name() != kname) {
      auto self = ctx.shared_from_this();
      const std::string old_kernel = s->kernel_id;
      return kernels_.start_kernel(
          kname, {}, ctx.who, "",
          [this, self, id, old_kernel](const std::shared_ptr<kernel>& k, std::optional<domain_error> err) {
            if (err) return self->reply(self->error(*err));
            auto* rec = sessions_.find(id);
            if (!rec) return self->reply(self->error(http::status::not_found, "Session was deleted"));
            rec->kernel_id = k->id();
            sessions_.put(*rec);
            watch(k);
            audit_session_kernel(*self, *k, id);
            if (auto old = kernels_.find(old_kernel))
              audit(*self, "kernel.delete",
                    {{"kernel_id", old_kernel}, {"sandbox_id", old->sandbox_id()}, {"session_id", id}});
            kernels_.shutdown_kernel(old_kernel, [] {});
            self->reply(self->json(http::status::ok, session_model(*rec)));
          });
    }
  }
  ctx.reply(ctx.json(http::status::ok, session_model(*s)));
}

void router::delete_session(context& ctx, const std::string& id) {
  auto* s = sessions_.find(id);
  if (!s || !ctx.who.sees(s->owner))
    return ctx.reply(ctx.error(http::status::not_found, "Session not found: " + id));
  const std::string kernel_id = s->kernel_id;
  sessions_.erase(id);
  auto self = ctx.shared_from_this();
  auto k = kernels_.find(kernel_id);
  const std::string sandbox_id = k ? k->sandbox_id() : "";
  kernels_.shutdown_kernel(kernel_id, [this, self, id, kernel_id, sandbox_id, ran = k != nullptr] {
    if (ran)
      audit(*self, "kernel.delete",
            {{"kernel_id", kernel_id}, {"sandbox_id", sandbox_id}, {"session_id", id}});
    self->reply(self->empty(http::status::no_content));
  });
}

}  // namespace sandgate::gateway
