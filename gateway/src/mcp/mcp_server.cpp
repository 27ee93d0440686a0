#include "mcp_server.hpp"

#include "mcp_protocol.hpp"
#include "mcp_tools.hpp"

#include <gateway/ids.hpp>
#include <gateway/log.hpp>
#include <sandboxing/base64.hpp>

#include <boost/url.hpp>

#include <algorithm>

namespace sandgate::gateway {
namespace http = boost::beast::http;
using json = nlohmann::json;
using mcp::rpc_error;

namespace {

constexpr const char* session_header = "Mcp-Session-Id";
constexpr std::size_t max_read_bytes =
    8 * 1024 * 1024;                            // read_file and resources/read: the file's start past this
constexpr std::size_t resource_sandboxes = 20;  // resources/list: this many sandboxes' workspaces

const json server_info = {{"name", "sandgate"}, {"title", "Sandgate"}, {"version", "0.1.0"}};

const char* instructions =
    "Sandgate runs code in isolated sandboxes. run_code keeps a persistent kernel per sandbox and language: "
    "define a variable in one call and use it in the next. Charts come back as images. Without sandbox_id "
    "the "
    "tools work in this session's own sandbox; results name the sandbox_id, pass it back to keep working "
    "there.";

std::string query_value(const std::string& v) {
  return boost::urls::encode(v, boost::urls::unreserved_chars);
}

// The message of the REST API's JSON error, or the status.
std::string refusal_text(const http::response<http::string_body>& res) {
  const json body = json::parse(res.body(), nullptr, false);
  if (body.is_object() && body.contains("message") && body["message"].is_string())
    return body["message"].get<std::string>();
  return "The request failed with HTTP " + std::to_string(res.result_int());
}

bool ok(const http::response<http::string_body>& res) {
  return res.result_int() / 100 == 2;
}

}  // namespace

struct mcp_server::call {
  mcp::message msg;
  std::string principal;
  std::string session_id;  // "" for a stateless request
  std::string version;
  bool stateless = false;
  api_caller api;
  std::function<void(response)> reply;
  unsigned http_version = 11;
  bool keep_alive = true;

  [[nodiscard]] bool answered() const { return !reply; }
  void send(http::status status, const json& body,
            const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    if (!reply) return;
    response res{status, http_version};
    res.keep_alive(keep_alive);
    res.set(http::field::cache_control, "no-store");
    for (auto& [k, v] : headers)
      res.set(k, v);
    if (!body.is_null()) {  // a 202 has no body
      res.set(http::field::content_type, "application/json");
      res.body() = body.dump(-1, ' ', false, json::error_handler_t::replace);
    }
    res.prepare_payload();
    auto r = std::move(reply);
    reply = nullptr;
    r(std::move(res));
  }
};

mcp_server::mcp_server(std::size_t sessions_per_principal, std::chrono::seconds session_idle)
    : sessions_per_principal_(sessions_per_principal), session_idle_(session_idle) {}

void mcp_server::handle(const request& req, const std::string& principal, api_caller api,
                        std::function<void(response)> reply) {
  auto plain = [&](http::status status, const json& body,
                   const std::vector<std::pair<std::string, std::string>>& h) {
    response res{status, req.version()};
    res.keep_alive(req.keep_alive());
    for (auto& [k, v] : h)
      res.set(k, v);
    if (!body.is_null()) {
      res.set(http::field::content_type, "application/json");
      res.body() = body.dump();
    }
    res.prepare_payload();
    reply(std::move(res));
  };
  if (req.method() == http::verb::post) return post(req, principal, std::move(api), std::move(reply));
  if (req.method() == http::verb::delete_) {
    const auto id = std::string(req[session_header]);
    if (id.empty())
      return plain(http::status::bad_request,
                   mcp::error_body({mcp::invalid_request,
                                    "The Mcp-Session-Id header names the session to end", nullptr, 400},
                                   nullptr),
                   {});
    const auto s = sessions_.find(id);
    if (s == sessions_.end() || s->second.principal != principal)
      return plain(http::status::not_found,
                   mcp::error_body({mcp::invalid_request, "Session not found", nullptr, 404}, nullptr), {});
    sessions_.erase(s);
    return plain(http::status::no_content, nullptr, {});
  }
  // No stream for the server's own messages: it sends none. The body is the API's own error.
  plain(http::status::method_not_allowed,
        {{"reason", "Method Not Allowed"},
         {"message", "GET /mcp: this server sends no messages of its own; POST JSON-RPC messages"}},
        {{"Allow", "POST, DELETE"}});
}

void mcp_server::post(const request& req, const std::string& principal, api_caller api,
                      std::function<void(response)> reply) {
  auto c = std::make_shared<call>();
  c->principal = principal;
  // An answer the tool cannot use (an exception on the io thread) fails the call, not the gateway.
  c->api = [raw = std::move(api), weak = std::weak_ptr<call>(c)](api_request r,
                                                                 std::function<void(response)> done) {
    raw(std::move(r), [weak, done = std::move(done)](response res) {
      try {
        done(std::move(res));
      } catch (const std::exception& e) {
        log::error("mcp_call_failed", {{"error", e.what()}});
        if (auto failed = weak.lock())
          failed->send(
              http::status::ok,
              mcp::error_body({mcp::internal_error, "Internal error", nullptr, 200}, failed->msg.id));
      }
    });
  };
  c->reply = std::move(reply);
  c->http_version = req.version();
  c->keep_alive = req.keep_alive();
  const auto content_type = std::string(req[http::field::content_type]);
  if (!content_type.starts_with("application/json"))
    return c->send(
        http::status::unsupported_media_type,
        mcp::error_body({mcp::invalid_request, "Content-Type must be application/json", nullptr, 415},
                        nullptr));
  const auto accept = std::string(req[http::field::accept]);
  if (!accept.empty() && accept.find("application/json") == std::string::npos &&
      accept.find("*/*") == std::string::npos && accept.find("application/*") == std::string::npos)
    return c->send(
        http::status::not_acceptable,
        mcp::error_body({mcp::invalid_request, "Accept must include application/json", nullptr, 406},
                        nullptr));
  auto parsed = mcp::parse_message(req.body());
  if (auto* e = std::get_if<rpc_error>(&parsed))
    return c->send(static_cast<http::status>(e->http_status), mcp::error_body(*e, nullptr));
  c->msg = std::move(std::get<mcp::message>(parsed));
  if (c->msg.type == mcp::message::kind::request && c->msg.method == "initialize") return initialize(c, req);

  if (mcp::is_stateless_request(c->msg, req)) {
    if (auto e = mcp::check_stateless(c->msg, req)) return fail(c, *e);
    c->stateless = true;
    c->version = std::string(mcp::stateless_version);
    if (c->msg.type != mcp::message::kind::request) return c->send(http::status::accepted, nullptr);
    return dispatch(c);
  }
  // A session's request.
  const auto id = std::string(req[session_header]);
  const auto header_version = std::string(req["MCP-Protocol-Version"]);
  if (!header_version.empty() && !mcp::is_session_version(header_version))
    return fail(c, {mcp::invalid_request, "Unsupported MCP-Protocol-Version: " + header_version,
                    json{{"supported", mcp::supported_versions()}, {"requested", header_version}}, 400});
  if (id.empty()) {
    if (c->msg.type != mcp::message::kind::request) return c->send(http::status::accepted, nullptr);
    return fail(c, {mcp::invalid_request,
                    "The Mcp-Session-Id header is required: initialize first, or send a 2026-07-28 request",
                    json{{"supported", mcp::supported_versions()}}, 400});
  }
  const auto s = sessions_.find(id);
  if (s == sessions_.end() || s->second.principal != principal)
    return fail(c, {mcp::invalid_request, "Session not found: initialize a new one", nullptr, 404});
  s->second.last_used = std::chrono::steady_clock::now();
  c->session_id = id;
  c->version = s->second.version;
  if (c->msg.type == mcp::message::kind::notification) {
    if (c->msg.method == "notifications/cancelled") cancelled(id, c->msg.params, c->api);
    return c->send(http::status::accepted, nullptr);
  }
  if (c->msg.type == mcp::message::kind::response) return c->send(http::status::accepted, nullptr);
  dispatch(c);
}

void mcp_server::initialize(const call_ptr& c, const request& req) {
  (void)req;
  forget_idle_sessions();
  const auto requested = c->msg.params.value("protocolVersion", json());
  if (!requested.is_string())
    return fail(c, {mcp::invalid_params, "Invalid params: protocolVersion must be a string", nullptr, 400});
  const auto asked = requested.get<std::string>();
  session s;
  s.principal = c->principal;
  s.version = mcp::is_session_version(asked) ? asked : std::string(mcp::latest_session_version);
  s.last_used = std::chrono::steady_clock::now();
  // Each principal keeps its most recent sessions.
  std::vector<std::map<std::string, session>::iterator> own;
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it)
    if (it->second.principal == c->principal) own.push_back(it);
  if (own.size() >= sessions_per_principal_) {
    auto oldest = *std::min_element(own.begin(), own.end(), [](const auto& a, const auto& b) {
      return a->second.last_used < b->second.last_used;
    });
    sessions_.erase(oldest);
  }
  const auto id = random_hex(16);
  c->session_id = id;
  c->version = s.version;
  sessions_.emplace(id, std::move(s));
  log::info("mcp_session", {{"principal", c->principal}, {"version", c->version}});
  json result{
      {"protocolVersion", c->version},
      {"capabilities", {{"tools", {{"listChanged", false}}}, {"resources", {{"listChanged", false}}}}},
      {"serverInfo", server_info},
      {"instructions", instructions}};
  c->send(http::status::ok, mcp::result_body(c->msg.id, std::move(result)), {{session_header, id}});
}

void mcp_server::forget_idle_sessions() {
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(sessions_, [&](const auto& kv) { return now - kv.second.last_used > session_idle_; });
}

void mcp_server::dispatch(const call_ptr& c) {
  const auto& m = c->msg.method;
  if (m == "ping" && !c->stateless) return answer(c, json::object());
  if (m == "server/discover") {
    if (!c->stateless)
      return fail(c,
                  {mcp::invalid_params, "server/discover needs the 2026-07-28 request _meta", nullptr, 400});
    return answer(c,
                  {{"supportedVersions", mcp::supported_versions()},
                   {"capabilities", {{"tools", json::object()}, {"resources", json::object()}}},
                   {"instructions", instructions}},
                  true, false);
  }
  if (m == "tools/list") return list_tools(c);
  if (m == "tools/call") return call_tool(c);
  if (m == "resources/list") return list_resources(c);
  if (m == "resources/templates/list")
    return answer(
        c,
        {{"resourceTemplates",
          json::array({{{"uriTemplate", "sandgate://sandboxes/{sandbox_id}/files/{+path}"},
                        {"name", "sandbox-file"},
                        {"title", "A file of a sandbox"},
                        {"description",
                         "A file in a sandbox's /workspace (path relative to it); ~/ then an absolute "
                         "path for a file elsewhere in the sandbox."}}})}},
        true, false);
  if (m == "resources/read") return read_resource(c);
  fail(c, {mcp::method_not_found, "Method not found: " + m, nullptr, c->stateless ? 404u : 200u});
}

void mcp_server::answer(const call_ptr& c, json result, bool cacheable, bool private_cache) {
  if (c->stateless) {
    result["resultType"] = "complete";
    result["_meta"]["io.modelcontextprotocol/serverInfo"] = server_info;
    if (cacheable) {
      result["ttlMs"] = private_cache ? 0 : 60000;
      result["cacheScope"] = private_cache ? "private" : "public";
    }
  }
  c->send(http::status::ok, mcp::result_body(c->msg.id, std::move(result)));
}

void mcp_server::fail(const call_ptr& c, const rpc_error& e) {
  c->send(static_cast<http::status>(e.http_status), mcp::error_body(e, c->msg.id));
}

void mcp_server::api_failed(const call_ptr& c, const response& res) {
  answer(c, mcp::tool_error(refusal_text(res)));
}

void mcp_server::cancelled(const std::string& session_id, const json& params, const api_caller& api) {
  const auto s = sessions_.find(session_id);
  if (s == sessions_.end() || !params.is_object() || !params.contains("requestId")) return;
  const auto r = s->second.running.find(params["requestId"].dump());
  if (r == s->second.running.end()) return;  // unknown or done: ignored, as the spec says
  log::info("mcp_cancelled", {{"kernel_id", r->second}});
  api({http::verb::post, "api/kernels/" + r->second + "/interrupt", "", ""}, [](const response&) {});
}

void mcp_server::list_tools(const call_ptr& c) {
  with_kernelspecs(c, [this, c] { answer(c, {{"tools", mcp::tool_definitions(languages())}}, true, false); });
}

void mcp_server::call_tool(const call_ptr& c) {
  const auto name = c->msg.params.value("name", json());
  if (!name.is_string())
    return fail(c, {mcp::invalid_params, "Invalid params: name must be a string", nullptr, 200});
  const auto tool = name.get<std::string>();
  if (!mcp::is_tool(tool)) return fail(c, {mcp::invalid_params, "Unknown tool: " + tool, nullptr, 200});
  const json args = c->msg.params.value("arguments", json::object());
  if (auto err = mcp::argument_error(tool, args)) {
    // 2025-06-18 calls invalid arguments a protocol error; later versions a tool error the model can fix.
    if (c->version == "2025-06-18")
      return fail(c, {mcp::invalid_params, "Invalid params: " + *err, nullptr, 200});
    return answer(c, mcp::tool_error("Invalid arguments: " + *err));
  }
  if (tool == "run_code") return run_code(c, args);
  if (tool == "run_shell") return run_shell(c, args);
  if (tool == "create_sandbox") return create_sandbox(c, args);
  if (tool == "list_sandboxes") return list_sandboxes(c);
  if (tool == "close_sandbox") return close_sandbox(c, args);
  if (tool == "read_file") return read_file(c, args);
  if (tool == "write_file") return write_file(c, args);
  list_files(c, args);
}

void mcp_server::once(const std::string& key, waiter then, const std::function<void(waiter done)>& make) {
  auto& waiting = pending_[key];
  waiting.push_back(std::move(then));
  if (waiting.size() > 1) return;
  make([this, key](const std::string& id, const response* refusal) {
    auto node = pending_.extract(key);
    for (auto& w : node.mapped())
      w(id, refusal);
  });
}

void mcp_server::with_sandbox(const call_ptr& c, const json& args,
                              std::function<void(const std::string&)> then) {
  if (args.contains("sandbox_id")) return then(args["sandbox_id"].get<std::string>());
  auto create = [this, c](waiter done) {
    c->api({http::verb::post, "api/sandboxes", json{{"metadata", {{"created_by", "mcp"}}}}.dump(), ""},
           [this, c, done = std::move(done)](const response& res) {
             if (!ok(res)) return done("", &res);
             const auto id = json::parse(res.body(), nullptr, false).value("id", std::string());
             if (auto s = sessions_.find(c->session_id); s != sessions_.end()) s->second.sandbox_id = id;
             done(id, nullptr);
           });
  };
  auto use = [this, c, then = std::move(then)](const std::string& id, const response* refusal) {
    if (refusal) return api_failed(c, *refusal);
    then(id);
  };
  const auto s = sessions_.find(c->session_id);
  if (s == sessions_.end()) return create(use);  // stateless: a sandbox of the call's own
  if (!s->second.sandbox_id.empty()) return use(s->second.sandbox_id, nullptr);
  once("sandbox/" + c->session_id, use, create);
}

void mcp_server::with_kernelspecs(const call_ptr& c, std::function<void()> then) {
  if (!kernelspecs_.is_null()) return then();
  c->api({http::verb::get, "api/kernelspecs", "", ""}, [this, c,
                                                        then = std::move(then)](const response& res) {
    if (!ok(res))
      return fail(c, {mcp::internal_error, "Kernelspecs unavailable: " + refusal_text(res), nullptr, 200});
    const json specs = json::parse(res.body(), nullptr, false);
    if (specs.is_object()) kernelspecs_ = specs;
    then();
  });
}

std::vector<std::string> mcp_server::languages() const {
  std::vector<std::string> out;
  const auto add = [&](const std::string& v) {
    if (!v.empty() && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  };
  const auto specs = kernelspecs_.value("kernelspecs", json::object());
  const auto default_name = kernelspecs_.value("default", std::string());
  if (specs.contains(default_name))
    add(specs[default_name].value("spec", json::object()).value("language", std::string()));
  for (const auto& [name, spec] : specs.items())
    add(spec.value("spec", json::object()).value("language", std::string()));
  for (const auto& [name, spec] : specs.items())
    add(name);
  return out;
}

std::string mcp_server::spec_for(const std::string& language) const {
  const auto specs = kernelspecs_.value("kernelspecs", json::object());
  if (specs.contains(language)) return language;
  auto default_name = kernelspecs_.value("default", std::string());
  const auto speaks = [&](const json& spec) {
    auto l = spec.value("spec", json::object()).value("language", std::string());
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char ch) { return std::tolower(ch); });
    return l == language;
  };
  if (specs.contains(default_name) && speaks(specs[default_name])) return default_name;
  for (const auto& [name, spec] : specs.items())
    if (speaks(spec)) return name;
  return "";
}

void mcp_server::with_kernel(const call_ptr& c, const std::string& sandbox_id, const std::string& spec,
                             std::function<void(const std::string&)> then) {
  const auto key = c->principal + "/" + sandbox_id + "/" + spec;
  if (const auto k = kernels_.find(key); k != kernels_.end()) return then(k->second);
  auto use = [this, c, then = std::move(then)](const std::string& id, const response* refusal) {
    if (refusal) return api_failed(c, *refusal);
    then(id);
  };
  once("kernel/" + key, use, [this, c, key, sandbox_id, spec](const waiter& done) {
    c->api({http::verb::get, "api/kernels", "", ""}, [this, c, key, sandbox_id, spec,
                                                      done](const response& list) {
      const json kernels = ok(list) ? json::parse(list.body(), nullptr, false) : json();
      if (kernels.is_array())
        for (const auto& k : kernels)
          if (k.value("sandbox_id", std::string()) == sandbox_id && k.value("name", std::string()) == spec) {
            kernels_[key] = k.value("id", std::string());
            return done(kernels_[key], nullptr);
          }
      c->api({http::verb::post, "api/sandboxes/" + query_value(sandbox_id) + "/kernels",
              json{{"name", spec}}.dump(), ""},
             [this, key, done](const response& res) {
               if (!ok(res)) return done("", &res);
               kernels_[key] = json::parse(res.body(), nullptr, false).value("id", std::string());
               done(kernels_[key], nullptr);
             });
    });
  });
}

void mcp_server::run_code(const call_ptr& c, const json& args) {
  with_kernelspecs(c, [this, c, args] {
    const auto language = args.value("language", languages().empty() ? std::string() : languages().front());
    const auto spec = spec_for(language);
    if (spec.empty()) {
      std::string known;
      for (const auto& l : languages())
        known += (known.empty() ? "" : ", ") + l;
      return answer(c,
                    mcp::tool_error("No kernel speaks \"" + language + "\"; the languages here: " + known));
    }
    with_sandbox(c, args, [this, c, args, spec, language](const std::string& sandbox_id) {
      execute(c, sandbox_id, spec, language, args, true);
    });
  });
}

void mcp_server::execute(const call_ptr& c, const std::string& sandbox_id, const std::string& spec,
                         const std::string& language, const json& args, bool retry) {
  with_kernel(c, sandbox_id, spec, [=, this](const std::string& kernel_id) {
    json body{{"code", args["code"]}};
    if (args.contains("timeout_s")) body["timeout_s"] = args["timeout_s"];
    const auto request_key = c->msg.id.dump();
    if (auto s = sessions_.find(c->session_id); s != sessions_.end())
      s->second.running[request_key] = kernel_id;
    c->api({http::verb::post, "api/kernels/" + kernel_id + "/execute", body.dump(), ""},
           [=, this](const response& res) {
             if (auto s = sessions_.find(c->session_id); s != sessions_.end())
               s->second.running.erase(request_key);
             if (res.result() == http::status::not_found && retry) {
               // The kernel went away (deleted, its sandbox's kernels shut down): another one.
               kernels_.erase(c->principal + "/" + sandbox_id + "/" + spec);
               return execute(c, sandbox_id, spec, language, args, false);
             }
             if (!ok(res)) return api_failed(c, res);
             answer(c, mcp::code_result(json::parse(res.body(), nullptr, false), sandbox_id, kernel_id,
                                        language));
           });
  });
}

void mcp_server::run_shell(const call_ptr& c, const json& args) {
  with_sandbox(c, args, [this, c, args](const std::string& sandbox_id) {
    json body{{"cmd", args["command"]}};
    if (args.contains("cwd")) body["cwd"] = args["cwd"];
    if (args.contains("timeout_s")) body["timeout_s"] = args["timeout_s"];
    c->api({http::verb::post, "api/sandboxes/" + query_value(sandbox_id) + "/commands", body.dump(), ""},
           [this, c, sandbox_id](const response& res) {
             if (!ok(res)) return api_failed(c, res);
             answer(c, mcp::shell_result(json::parse(res.body(), nullptr, false), sandbox_id));
           });
  });
}

namespace {
json sandbox_summary(const json& model) {
  return {{"sandbox_id", model.value("id", std::string())},
          {"expires_at", model.value("expires_at", std::string())},
          {"metadata", model.value("metadata", json::object())},
          {"network", model.value("network", json("none"))}};
}
}  // namespace

void mcp_server::create_sandbox(const call_ptr& c, const json& args) {
  c->api({http::verb::post, "api/sandboxes", args.dump(), ""}, [this, c](const response& res) {
    if (!ok(res)) return api_failed(c, res);
    answer(c, mcp::tool_result(sandbox_summary(json::parse(res.body(), nullptr, false))));
  });
}

void mcp_server::list_sandboxes(const call_ptr& c) {
  c->api({http::verb::get, "api/sandboxes", "", ""}, [this, c](const response& res) {
    if (!ok(res)) return api_failed(c, res);
    json out = json::array();
    for (const auto& s : json::parse(res.body(), nullptr, false))
      out.push_back(sandbox_summary(s));
    answer(c, mcp::tool_result({{"sandboxes", std::move(out)}}));
  });
}

void mcp_server::close_sandbox(const call_ptr& c, const json& args) {
  const auto id = args["sandbox_id"].get<std::string>();
  c->api({http::verb::delete_, "api/sandboxes/" + query_value(id), "", ""},
         [this, c, id](const response& res) {
           if (!ok(res)) return api_failed(c, res);
           for (auto& [sid, s] : sessions_)
             if (s.sandbox_id == id) s.sandbox_id.clear();
           std::erase_if(kernels_,
                         [&](const auto& kv) { return kv.first.find("/" + id + "/") != std::string::npos; });
           answer(c, mcp::tool_result({{"sandbox_id", id}, {"closed", true}}));
         });
}

void mcp_server::read_file(const call_ptr& c, const json& args) {
  with_sandbox(c, args, [this, c, args](const std::string& sandbox_id) {
    const auto path = args["path"].get<std::string>();
    std::string target = "api/sandboxes/" + query_value(sandbox_id) + "/fs?path=" + query_value(path);
    std::string range = "bytes=0-" + std::to_string(max_read_bytes - 1);
    for (const char* key : {"start_line", "end_line"})
      if (args.contains(key)) {
        target += std::string("&") + key + "=" + args[key].dump();
        range.clear();
      }
    c->api({http::verb::get, target, "", range}, [this, c, sandbox_id, path](const response& res) {
      if (!ok(res)) return api_failed(c, res);
      bool truncated = false;
      const auto content_range = std::string(res[http::field::content_range]);
      if (const auto slash = content_range.rfind('/'); slash != std::string::npos)
        truncated = content_range.substr(slash + 1) != std::to_string(res.body().size());
      answer(c, mcp::file_result(sandbox_id, path, res.body(), truncated));
    });
  });
}

void mcp_server::write_file(const call_ptr& c, const json& args) {
  std::string bytes = args["content"].get<std::string>();
  if (args.value("encoding", std::string("utf-8")) == "base64") {
    std::erase_if(bytes, [](char ch) { return ch == '\n' || ch == '\r'; });
    auto decoded = sandboxing::control::base64_decode(bytes);
    if (!decoded) return answer(c, mcp::tool_error("content is not valid base64"));
    bytes = std::move(*decoded);
  }
  with_sandbox(c, args, [this, c, args, bytes = std::move(bytes)](const std::string& sandbox_id) {
    const auto path = args["path"].get<std::string>();
    c->api({http::verb::put, "api/sandboxes/" + query_value(sandbox_id) + "/fs?path=" + query_value(path),
            bytes, ""},
           [this, c, sandbox_id, path, size = bytes.size()](const response& res) {
             if (!ok(res)) return api_failed(c, res);
             answer(c, mcp::tool_result({{"sandbox_id", sandbox_id}, {"path", path}, {"size_bytes", size}}));
           });
  });
}

void mcp_server::list_files(const call_ptr& c, const json& args) {
  with_sandbox(c, args, [this, c, args](const std::string& sandbox_id) {
    const auto path = args.value("path", std::string("/workspace"));
    c->api({http::verb::get,
            "api/sandboxes/" + query_value(sandbox_id) + "/fs/list?path=" + query_value(path), "", ""},
           [this, c, sandbox_id, path](const response& res) {
             if (!ok(res)) return api_failed(c, res);
             json entries = json::array();
             for (const auto& e : json::parse(res.body(), nullptr, false)) {
               const auto name = e.value("name", std::string());
               json entry{
                   {"name", name}, {"type", e.value("type", std::string())}, {"size", e.value("size", 0)}};
               if (entry["type"] == "file")
                 entry["uri"] = mcp::file_uri(sandbox_id, (path.ends_with("/") ? path : path + "/") + name);
               entries.push_back(std::move(entry));
             }
             answer(c, mcp::tool_result({{"sandbox_id", sandbox_id}, {"path", path}, {"entries", entries}}));
           });
  });
}

void mcp_server::list_resources(const call_ptr& c) {
  // The files at the top of the workspaces: the session's sandbox's, or (stateless) the caller's sandboxes'.
  auto list_in = [this, c](std::vector<std::string> ids) {
    if (ids.size() > resource_sandboxes) ids.resize(resource_sandboxes);
    auto resources = std::make_shared<json>(json::array());
    auto left = std::make_shared<std::size_t>(ids.size());
    if (ids.empty()) return answer(c, {{"resources", json::array()}}, true, true);
    for (const auto& id : ids)
      c->api({http::verb::get, "api/sandboxes/" + query_value(id) + "/fs/list?path=%2Fworkspace", "", ""},
             [this, c, id, resources, left](const response& res) {
               if (ok(res))
                 for (const auto& e : json::parse(res.body(), nullptr, false))
                   if (e.value("type", std::string()) == "file") {
                     const auto name = e.value("name", std::string());
                     resources->push_back({{"uri", mcp::file_uri(id, name)},
                                           {"name", name},
                                           {"title", name + " (sandbox " + id.substr(0, 8) + ")"},
                                           {"mimeType", mcp::mime_type_of(name)},
                                           {"size", e.value("size", 0)}});
                   }
               if (--*left == 0) answer(c, {{"resources", std::move(*resources)}}, true, true);
             });
  };
  if (const auto s = sessions_.find(c->session_id); s != sessions_.end()) {
    if (s->second.sandbox_id.empty()) return list_in({});
    return list_in({s->second.sandbox_id});
  }
  c->api({http::verb::get, "api/sandboxes", "", ""}, [this, c, list_in](const response& res) {
    if (!ok(res)) return fail(c, {mcp::internal_error, refusal_text(res), nullptr, 200});
    std::vector<std::string> ids;
    for (const auto& s : json::parse(res.body(), nullptr, false))
      ids.push_back(s.value("id", std::string()));
    list_in(std::move(ids));
  });
}

void mcp_server::read_resource(const call_ptr& c) {
  const auto uri = c->msg.params.value("uri", json());
  if (!uri.is_string())
    return fail(c, {mcp::invalid_params, "Invalid params: uri must be a string", nullptr, 200});
  const auto not_found = [this, c, uri](const std::string& why) {
    fail(c, {c->stateless ? mcp::invalid_params : mcp::resource_not_found, "Resource not found: " + why,
             json{{"uri", uri}}, 200});
  };
  const auto ref = mcp::parse_file_uri(uri.get<std::string>());
  if (!ref) return not_found("not a sandgate://sandboxes/{id}/files/{path} URI");
  c->api({http::verb::get,
          "api/sandboxes/" + query_value(ref->sandbox_id) + "/fs?path=" + query_value(ref->path), "",
          "bytes=0-" + std::to_string(max_read_bytes - 1)},
         [this, c, uri, ref = *ref, not_found](const response& res) {
           if (!ok(res)) return not_found(refusal_text(res));
           const auto mime = mcp::mime_type_of(ref.path);
           json content{{"uri", uri}, {"mimeType", mime}};
           if (mcp::is_utf8(res.body()) && !mime.starts_with("image/"))
             content["text"] = res.body();
           else
             content["blob"] = sandboxing::control::base64_encode(res.body());
           answer(c, {{"contents", json::array({content})}}, true, true);
         });
}

}  // namespace sandgate::gateway
