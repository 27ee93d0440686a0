// The route table: one entry per method and path, each with the resource its
// id names. dispatch() matches the path, answers 405 for a path known under
// another method, and answers an id of another node before any handler runs.
#include "router.hpp"

#include <gateway/ids.hpp>

namespace sandgate::gateway {
namespace http = boost::beast::http;

namespace {

using verb = http::verb;

// A pattern's segments: a literal, "{}" (one segment, captured) or a final
// "**" (the rest, zero or more segments, not captured: file paths).
bool match(std::string_view pattern, const std::vector<std::string>& parts, std::vector<std::string>& args) {
  args.clear();
  std::size_t i = 0;
  while (!pattern.empty()) {
    const auto slash = pattern.find('/');
    const auto seg = pattern.substr(0, slash);
    pattern = slash == std::string_view::npos ? std::string_view() : pattern.substr(slash + 1);
    if (seg == "**") return true;
    if (i >= parts.size()) return false;
    if (seg == "{}")
      args.push_back(parts[i]);
    else if (seg != parts[i])
      return false;
    ++i;
  }
  return i == parts.size();
}

}  // namespace

const std::vector<router::route>& router::routes() {
  using r = router;
  using args = const std::vector<std::string>&;
  static const std::vector<route> table = {
      // Answered in prepare(), before authentication; listed so that other methods get 405.
      {verb::get, "health", resource::none,
       [](r&, context& c, args) {
         c.reply(c.json(http::status::ok, {{"status", "ok"}}));
       }},
      {verb::get, "metrics", resource::none, [](r& self, context& c, args) { self.get_metrics(c); }},
      {verb::get, "kernelspecs/{}/{}", resource::none,
       [](r& self, context& c, args a) { self.get_kernelspec_resource(c, a[0], a[1]); }},
      {verb::get, "api", resource::none, [](r& self, context& c, args) { self.get_api(c); }},
      {verb::get, "api/openapi.json", resource::none, [](r& self, context& c, args) { self.get_openapi(c); }},
      {verb::get, "api/node", resource::none, [](r& self, context& c, args) { self.get_node(c); }},
      {verb::patch, "api/node", resource::none, [](r& self, context& c, args) { self.patch_node(c); }},
      {verb::get, "api/kernelspecs", resource::none,
       [](r& self, context& c, args) { self.get_kernelspecs(c); }},
      {verb::get, "api/kernelspecs/{}", resource::none,
       [](r& self, context& c, args a) { self.get_kernelspec(c, a[0]); }},

      {verb::get, "api/kernels", resource::none, [](r& self, context& c, args) { self.list_kernels(c); }},
      {verb::post, "api/kernels", resource::none, [](r& self, context& c, args) { self.post_kernel(c); }},
      {verb::get, "api/kernels/{}", resource::kernel,
       [](r& self, context& c, args a) { self.get_kernel(c, a[0]); }},
      {verb::delete_, "api/kernels/{}", resource::kernel,
       [](r& self, context& c, args a) { self.delete_kernel(c, a[0]); }},
      {verb::post, "api/kernels/{}/interrupt", resource::kernel,
       [](r& self, context& c, args a) { self.interrupt_kernel(c, a[0]); }},
      {verb::post, "api/kernels/{}/restart", resource::kernel,
       [](r& self, context& c, args a) { self.restart_kernel(c, a[0]); }},
      {verb::post, "api/kernels/{}/execute", resource::kernel,
       [](r& self, context& c, args a) { self.execute_code(c, a[0]); }},
      {verb::get, "api/kernels/{}/executions/{}", resource::kernel,
       [](r& self, context& c, args a) { self.get_execution(c, a[0], a[1]); }},
      {verb::get, "api/kernels/{}/channels", resource::kernel,
       [](r&, context& c, args) {
         c.reply(c.error(http::status::bad_request, "The channels endpoint needs a WebSocket upgrade"));
       }},

      {verb::get, "api/sandboxes", resource::none, [](r& self, context& c, args) { self.list_sandboxes(c); }},
      {verb::post, "api/sandboxes", resource::none, [](r& self, context& c, args) { self.post_sandbox(c); }},
      {verb::get, "api/sandboxes/{}", resource::sandbox,
       [](r& self, context& c, args a) { self.get_sandbox(c, a[0]); }},
      {verb::patch, "api/sandboxes/{}", resource::sandbox,
       [](r& self, context& c, args a) { self.patch_sandbox(c, a[0]); }},
      {verb::patch, "api/sandboxes/{}/network", resource::sandbox,
       [](r& self, context& c, args a) { self.patch_sandbox_network(c, a[0]); }},
      {verb::delete_, "api/sandboxes/{}", resource::sandbox,
       [](r& self, context& c, args a) { self.delete_sandbox(c, a[0]); }},
      {verb::post, "api/sandboxes/{}/kernels", resource::sandbox,
       [](r& self, context& c, args a) { self.post_kernel(c, a[0]); }},
      {verb::post, "api/sandboxes/{}/commands", resource::sandbox,
       [](r& self, context& c, args a) {
         if (auto s = self.own_sandbox(c, a[0])) self.post_command(c, s);
       }},
      {verb::post, "api/sandboxes/{}/processes", resource::sandbox,
       [](r& self, context& c, args a) { self.post_process(c, a[0]); }},
      {verb::get, "api/sandboxes/{}/processes", resource::sandbox,
       [](r& self, context& c, args a) { self.list_processes(c, a[0]); }},
      {verb::get, "api/sandboxes/{}/processes/{}", resource::sandbox,
       [](r& self, context& c, args a) { self.get_process(c, a[0], a[1]); }},
      {verb::delete_, "api/sandboxes/{}/processes/{}", resource::sandbox,
       [](r& self, context& c, args a) { self.delete_process(c, a[0], a[1]); }},
      {verb::get, "api/sandboxes/{}/processes/{}/wait", resource::sandbox,
       [](r& self, context& c, args a) { self.wait_process(c, a[0], a[1]); }},
      {verb::post, "api/sandboxes/{}/processes/{}/signal", resource::sandbox,
       [](r& self, context& c, args a) { self.signal_process(c, a[0], a[1]); }},
      {verb::post, "api/sandboxes/{}/processes/{}/resize", resource::sandbox,
       [](r& self, context& c, args a) { self.resize_process(c, a[0], a[1]); }},
      {verb::post, "api/sandboxes/{}/processes/{}/stdin", resource::sandbox,
       [](r& self, context& c, args a) { self.write_process_stdin(c, a[0], a[1]); }},
      {verb::get, "api/sandboxes/{}/processes/{}/attach", resource::sandbox,
       [](r&, context& c, args) {
         c.reply(c.error(http::status::bad_request, "The attach endpoint needs a WebSocket upgrade"));
       }},
      {verb::get, "api/sandboxes/{}/ports", resource::sandbox,
       [](r& self, context& c, args a) { self.list_ports(c, a[0]); }},
      {verb::post, "api/sandboxes/{}/port-urls", resource::sandbox,
       [](r& self, context& c, args a) { self.post_port_url(c, a[0]); }},
      {verb::get, "api/sandboxes/{}/fs", resource::sandbox,
       [](r& self, context& c, args a) { self.fs_request(c, a[0], ""); }},
      {verb::head, "api/sandboxes/{}/fs", resource::sandbox,
       [](r& self, context& c, args a) { self.fs_request(c, a[0], ""); }},
      {verb::put, "api/sandboxes/{}/fs", resource::sandbox,
       [](r& self, context& c, args a) { self.fs_request(c, a[0], ""); }},
      {verb::delete_, "api/sandboxes/{}/fs", resource::sandbox,
       [](r& self, context& c, args a) { self.fs_request(c, a[0], ""); }},
      {verb::get, "api/sandboxes/{}/fs/stat", resource::sandbox,
       [](r& self, context& c, args a) { self.fs_request(c, a[0], "stat"); }},
      {verb::get, "api/sandboxes/{}/fs/list", resource::sandbox,
       [](r& self, context& c, args a) { self.fs_request(c, a[0], "list"); }},
      {verb::post, "api/sandboxes/{}/fs/mkdir", resource::sandbox,
       [](r& self, context& c, args a) { self.fs_request(c, a[0], "mkdir"); }},
      {verb::post, "api/sandboxes/{}/fs/rename", resource::sandbox,
       [](r& self, context& c, args a) { self.fs_request(c, a[0], "rename"); }},
      {verb::get, "api/sandboxes/{}/files/**", resource::sandbox,
       [](r& self, context& c, args a) { self.file_request(c, a[0]); }},
      {verb::head, "api/sandboxes/{}/files/**", resource::sandbox,
       [](r& self, context& c, args a) { self.file_request(c, a[0]); }},
      {verb::delete_, "api/sandboxes/{}/files/**", resource::sandbox,
       [](r& self, context& c, args a) { self.file_request(c, a[0]); }},
      {verb::put, "api/sandboxes/{}/files/**", resource::sandbox,
       [](r& self, context& c, args a) { self.file_request(c, a[0]); }},

      {verb::post, "mcp", resource::none, [](r& self, context& c, args) { self.mcp_request(c); }},
      {verb::get, "mcp", resource::none, [](r& self, context& c, args) { self.mcp_request(c); }},
      {verb::delete_, "mcp", resource::none, [](r& self, context& c, args) { self.mcp_request(c); }},
      {verb::get, "api/sessions", resource::none, [](r& self, context& c, args) { self.list_sessions(c); }},
      {verb::post, "api/sessions", resource::none, [](r& self, context& c, args) { self.post_session(c); }},
      {verb::get, "api/sessions/{}", resource::session,
       [](r& self, context& c, args a) { self.get_session(c, a[0]); }},
      {verb::patch, "api/sessions/{}", resource::session,
       [](r& self, context& c, args a) { self.patch_session(c, a[0]); }},
      {verb::delete_, "api/sessions/{}", resource::session,
       [](r& self, context& c, args a) { self.delete_session(c, a[0]); }},
  };
  return table;
}

void router::dispatch(context& ctx) {
  bool path_known = false;
  std::vector<std::string> args;
  for (const auto& entry : routes()) {
    if (!match(entry.pattern, ctx.parts, args)) continue;
    path_known = true;
    if (entry.method != ctx.req.method()) continue;
    if (entry.names != resource::none) {
      if (auto res = other_node(ctx.req, entry.names, args.at(0))) return ctx.reply(std::move(*res));
    }
    return entry.handle(*this, ctx, args);
  }
  if (path_known) return ctx.reply(ctx.error(http::status::method_not_allowed, "Method not allowed"));
  ctx.reply(ctx.error(http::status::not_found, "No such path"));
}

std::optional<router::response> router::other_node(const request& req, resource names,
                                                   const std::string& id) {
  // Only ids of Sandgate's layout (version 8) name a node; any other string
  // is an id nobody made, for the handler's plain 404.
  const auto node = id_node(id);
  if (!node || id[14] != '8' || *node == cfg_.node_id) return std::nullopt;
  // What this node holds is its own whatever the id says (a state dir
  // restarted under another --node-id keeps its kernels).
  const bool held = names == resource::kernel    ? kernels_.find(id) != nullptr
                    : names == resource::sandbox ? kernels_.sandboxes().find(id) != nullptr
                                                 : sessions_.find(id) != nullptr;
  if (held) return std::nullopt;
  static constexpr const char* noun[] = {"", "Kernel", "Sandbox", "Session"};
  return error_response_with_reason(http::status::not_found, "other_node",
                                    std::string(noun[static_cast<int>(names)]) + " " + id +
                                        " belongs to node " + std::to_string(*node) + ", not to node " +
                                        std::to_string(cfg_.node_id),
                                    req.version(), req.keep_alive());
}

}  // namespace sandgate::gateway
