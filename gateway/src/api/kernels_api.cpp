// /api, /api/kernelspecs, /kernelspecs/{name}/{file} and /api/kernels.
#include "router.hpp"

#include "../util/json_input.hpp"

#include <gateway/ids.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace sandgate::gateway {
namespace http = boost::beast::http;
using json = nlohmann::json;

namespace {

constexpr std::size_t max_env_entries = 256;
constexpr std::size_t max_env_value_bytes = 64 * 1024;

// What a kernel start request's env may set: KERNEL_* and the operator's
// --kernel-env-allow names. Jupyter Server and Notebook send their whole
// environment (HOME, PATH, tokens, anything secret in it); as Kernel
// Gateway does, only those names reach the kernel, the rest is dropped.
bool client_may_set(const std::string& name, const std::vector<std::string>& allowed) {
  if (is_kernel_variable(name)) return true;
  return std::any_of(allowed.begin(), allowed.end(),
                     [&](const std::string& a) { return a == "*" || a == name; });
}

// The request's env, filtered by client_may_set (names that are not
// identifiers are dropped too, as exported bash functions are); an env that
// is not an object of strings is an error.
std::optional<std::map<std::string, std::string>> parse_env(const json& body,
                                                            const std::vector<std::string>& allowed,
                                                            std::string& error) {
  std::map<std::string, std::string> env;
  if (!body.contains("env") || body["env"].is_null()) return env;
  const auto& e = body["env"];
  if (!e.is_object() || e.size() > max_env_entries) {
    error = "\"env\" must be an object of at most 256 string values";
    return std::nullopt;
  }
  for (const auto& [k, v] : e.items()) {
    if (!v.is_string() || v.get_ref<const std::string&>().size() > max_env_value_bytes) {
      error = "\"env\": bad entry \"" + k + "\" (values are strings of at most 64 KiB)";
      return std::nullopt;
    }
    if (client_may_set(k, allowed) && is_env_name(k)) env[k] = v.get<std::string>();
  }
  return env;
}

std::string content_type_for(const std::string& file) {
  auto ends = [&](std::string_view ext) {
    return file.size() >= ext.size() && file.compare(file.size() - ext.size(), ext.size(), ext) == 0;
  };
  if (ends(".png")) return "image/png";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".js")) return "application/javascript";
  if (ends(".css")) return "text/css";
  if (ends(".json")) return "application/json";
  return "application/octet-stream";
}

}  // namespace

std::optional<json> body_object(const std::string& body, std::string& error) {
  if (body.find_first_not_of(" \t\r\n") == std::string::npos) return json::object();
  auto j = parse_json(body);
  if (j.is_discarded()) {
    error = "Malformed JSON in the request body";
    return std::nullopt;
  }
  if (!j.is_object()) {
    error = "The request body must be a JSON object";
    return std::nullopt;
  }
  return j;
}

void router::get_api(context& ctx) {
  ctx.reply(ctx.json(http::status::ok,
                     {{"version", "2.0.0"}, {"server", "sandgate"}, {"sandgate_version", "0.1.0"}}));
}

json router::kernelspec_model(const kernelspec& spec) const {
  // As jupyter_server lists them: kernel.js and kernel.css by file name,
  // logo-* without the extension; other files are not listed.
  json resources = json::object();
  for (const auto& file : spec.resources) {
    const std::string url = cfg_.base_url + "kernelspecs/" + spec.name + "/" + file;
    if (file == "kernel.js" || file == "kernel.css") {
      resources[file] = url;
    } else if (file.rfind("logo-", 0) == 0) {
      const auto dot = file.rfind('.');
      resources[dot == std::string::npos ? file : file.substr(0, dot)] = url;
    }
  }
  auto spec_json = json::parse(spec.raw_json, nullptr, false);
  if (!spec_json.is_object()) spec_json = json::object();
  spec_json["interrupt_mode"] = spec.interrupt_mode;
  return {{"name", spec.name}, {"spec", spec_json}, {"resources", resources}};
}

void router::get_kernelspecs(context& ctx) {
  kernels_.specs().refresh();
  json specs = json::object();
  for (const auto& [name, spec] : kernels_.specs().all())
    specs[name] = kernelspec_model(spec);
  ctx.reply(
      ctx.json(http::status::ok, {{"default", kernels_.default_kernel_name()}, {"kernelspecs", specs}}));
}

void router::get_kernelspec(context& ctx, const std::string& name) {
  kernels_.specs().refresh();
  const auto* spec = kernels_.specs().find(name);
  if (!spec) return ctx.reply(ctx.error(http::status::not_found, "Kernel spec " + name + " not found"));
  ctx.reply(ctx.json(http::status::ok, kernelspec_model(*spec)));
}

void router::get_kernelspec_resource(context& ctx, const std::string& name, const std::string& file) {
  const auto* spec = kernels_.specs().find(name);
  // Only files the catalog listed beside kernel.json: no path ever comes from the request.
  if (!spec || std::find(spec->resources.begin(), spec->resources.end(), file) == spec->resources.end())
    return ctx.reply(ctx.error(http::status::not_found, "No such kernelspec resource"));
  std::ifstream in(spec->dir / file, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  response res{http::status::ok, ctx.req.version()};
  res.set(http::field::content_type, content_type_for(file));
  res.set(http::field::cache_control, "max-age=3600");
  res.keep_alive(ctx.req.keep_alive());
  res.body() = buf.str();
  ctx.reply(std::move(res));
}

json router::kernel_model(const kernel& k) const {
  return {{"id", k.id()},
          {"name", k.name()},
          {"last_activity", k.last_activity()},
          {"execution_state", k.execution_state()},
          {"connections", k.connections()},
          {"sandbox_id", k.sandbox_id()}};
}

std::shared_ptr<kernel> router::own_kernel(context& ctx, const std::string& id) {
  auto k = is_uuid(id) ? kernels_.find(id) : nullptr;
  if (!k || !ctx.who.sees(k->owner())) {
    ctx.reply(
        ctx.not_found("Kernel does not exist: " + id, k ? std::nullopt : kernels_.sandboxes().gone(id)));
    return nullptr;
  }
  return k;
}

void router::list_kernels(context& ctx) {
  json out = json::array();
  for (const auto& k : kernels_.list())
    if (ctx.who.sees(k->owner())) out.push_back(kernel_model(*k));
  reply_list(ctx, "api/kernels", std::move(out));
}

void router::post_kernel(context& ctx, const std::string& path_sandbox_id) {
  std::string error;
  auto body = body_object(ctx.req.body(), error);
  if (!body) return ctx.reply(ctx.error(http::status::bad_request, error));
  if (body->contains("name") && !(*body)["name"].is_string() && !(*body)["name"].is_null())
    return ctx.reply(ctx.error(http::status::bad_request, "\"name\" must be a string"));
  auto env = parse_env(*body, cfg_.kernel_env_allow, error);
  if (!env) return ctx.reply(ctx.error(http::status::bad_request, error));
  const std::string name = body->value("name", json()).is_string() ? (*body)["name"].get<std::string>() : "";
  const auto sandbox = body->value("sandbox_id", json());
  if (!sandbox.is_null() && !sandbox.is_string())
    return ctx.reply(ctx.error(http::status::bad_request, "\"sandbox_id\" must be a string"));
  if (!path_sandbox_id.empty() && sandbox.is_string() && sandbox.get<std::string>() != path_sandbox_id)
    return ctx.reply(
        ctx.error(http::status::bad_request, "\"sandbox_id\" differs from the sandbox in the path"));
  const std::string sandbox_id = !path_sandbox_id.empty() ? path_sandbox_id
                                 : sandbox.is_string()    ? sandbox.get<std::string>()
                                                          : "";
  if (auto res = other_node(ctx.req, resource::sandbox, sandbox_id)) return ctx.reply(std::move(*res));
  auto self = ctx.shared_from_this();
  kernels_.start_kernel(name, std::move(*env), ctx.who, sandbox_id,
                        [this, self, implicit = sandbox_id.empty()](const std::shared_ptr<kernel>& k,
                                                                    std::optional<domain_error> err) {
                          if (err) return self->reply(self->error(*err));
                          watch(k);
                          audit(*self, "kernel.create",
                                {{"kernel_id", k->id()},
                                 {"kernel_name", k->name()},
                                 {"sandbox_id", k->sandbox_id()},
                                 {"implicit_sandbox", implicit}});
                          auto res = self->json(http::status::created, kernel_model(*k));
                          res.set(http::field::location, cfg_.base_url + "api/kernels/" + k->id());
                          self->reply(std::move(res));
                        });
}

void router::get_kernel(context& ctx, const std::string& id) {
  if (auto k = own_kernel(ctx, id)) ctx.reply(ctx.json(http::status::ok, kernel_model(*k)));
}

void router::delete_kernel(context& ctx, const std::string& id) {
  auto k = own_kernel(ctx, id);
  if (!k) return;
  sessions_.forget_kernel(id);
  auto self = ctx.shared_from_this();
  kernels_.shutdown_kernel(id, [this, self, id, sandbox_id = k->sandbox_id()] {
    audit(*self, "kernel.delete", {{"kernel_id", id}, {"sandbox_id", sandbox_id}});
    self->reply(self->empty(http::status::no_content));
  });
}

void router::interrupt_kernel(context& ctx, const std::string& id) {
  if (auto k = own_kernel(ctx, id)) {
    k->interrupt();
    audit(ctx, "kernel.interrupt", {{"kernel_id", id}, {"sandbox_id", k->sandbox_id()}});
    ctx.reply(ctx.empty(http::status::no_content));
  }
}

void router::restart_kernel(context& ctx, const std::string& id) {
  auto k = own_kernel(ctx, id);
  if (!k) return;
  auto self = ctx.shared_from_this();
  k->restart([this, self, k](const std::string& error) {
    audit(*self, "kernel.restart",
          {{"kernel_id", k->id()},
           {"sandbox_id", k->sandbox_id()},
           {"outcome", error.empty() ? "ok" : "error"}});
    if (!error.empty()) return self->reply(self->error(http::status::conflict, "Restart failed: " + error));
    self->reply(self->json(http::status::ok, kernel_model(*k)));
  });
}

}  // namespace sandgate::gateway

namespace sandgate::gateway {

void router::execute_code(context& ctx, const std::string& id) {
  auto k = own_kernel(ctx, id);
  if (!k) return;
  std::string error;
  auto body = body_object(ctx.req.body(), error);
  if (!body) return ctx.reply(ctx.error(http::status::bad_request, error));
  for (const auto& [key, v] : body->items())
    if (key != "code" && key != "timeout_s")
      return ctx.reply(ctx.error(http::status::bad_request, "Unknown field \"" + key + "\""));
  if (!body->contains("code") || !(*body)["code"].is_string())
    return ctx.reply(ctx.error(http::status::bad_request, "\"code\" must be a string"));
  std::optional<std::chrono::milliseconds> timeout;
  if (body->contains("timeout_s") && !(*body)["timeout_s"].is_null()) {
    const auto& t = (*body)["timeout_s"];
    if (!t.is_number() || !(t.get<double>() > 0) || t.get<double>() > 1e7)
      return ctx.reply(ctx.error(http::status::bad_request, "\"timeout_s\" must be a positive number"));
    timeout = std::chrono::milliseconds(static_cast<std::int64_t>(t.get<double>() * 1000));
  }
  if (auto s = kernels_.sandboxes().find(k->sandbox_id())) s->touch();
  auto self = ctx.shared_from_this();
  const auto& code = (*body)["code"].get_ref<const std::string&>();
  k->execute(code, timeout,
             [this, self, kernel_id = k->id(), digest = sha256_hex(code),
              bytes = static_cast<std::uint64_t>(code.size())](const execution_record& r) {
               execution_audit_->amend(kernel_id, r.msg_id, self->who.name, digest, bytes);
               auto res = self->json(http::status::ok, json::object());
               res.body() = r.to_json();
               self->reply(std::move(res));
             });
}

void router::get_execution(context& ctx, const std::string& id, const std::string& msg_id) {
  auto k = own_kernel(ctx, id);
  if (!k) return;
  auto res = ctx.json(http::status::ok, json::object());
  if (auto r = k->execution(msg_id))
    res.body() = r->to_json();
  else if (auto stored = kernels_.stored_execution(id, msg_id))
    res.body() = std::move(*stored);
  else
    return ctx.reply(
        ctx.error(http::status::not_found, "No execution " + msg_id + " is known for this kernel"));
  ctx.reply(std::move(res));
}

}  // namespace sandgate::gateway
