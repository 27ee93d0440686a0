#pragma once
// The MCP endpoint, /mcp over Streamable HTTP: sessions (`initialize`,
// Mcp-Session-Id) for the 2025 versions and stateless requests for
// 2026-07-28 on the same endpoint. Tools and resources do their work
// through the REST API as the caller (api_caller), so ownership, quotas,
// limits and audit are the REST API's own.

#include "mcp_protocol.hpp"

#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sandgate::gateway {

class mcp_server {
 public:
  using request = boost::beast::http::request<boost::beast::http::string_body>;
  using response = boost::beast::http::response<boost::beast::http::string_body>;

  // A REST request made for a tool call, as the caller.
  struct api_request {
    boost::beast::http::verb method = boost::beast::http::verb::get;
    std::string target;  // below the base URL: "api/sandboxes"
    std::string body;
    std::string range;  // a Range header, or ""
  };
  using api_caller = std::function<void(api_request, std::function<void(response)>)>;

  // Sessions: at most `sessions_per_principal` each (the least recently used
  // gives way), ended after `session_idle` without a request.
  explicit mcp_server(std::size_t sessions_per_principal = 1000,
                      std::chrono::seconds session_idle = std::chrono::hours(24));

  // Answers one request to the endpoint by `principal` (authenticated, its
  // Origin checked) through `reply`.
  void handle(const request& req, const std::string& principal, api_caller call,
              std::function<void(response)> reply);

  [[nodiscard]] std::size_t session_count() const { return sessions_.size(); }

 private:
  struct session {
    std::string principal;
    std::string version;
    std::string sandbox_id;  // the session's own, once made
    std::chrono::steady_clock::time_point last_used;
    std::map<std::string, std::string> running;  // a request's id (as JSON) → the kernel running its code
  };
  struct call;  // one request being answered
  using call_ptr = std::shared_ptr<call>;

  void post(const request& req, const std::string& principal, api_caller call,
            std::function<void(response)> reply);
  void initialize(const call_ptr& c, const request& req);
  void dispatch(const call_ptr& c);
  void cancelled(const std::string& session_id, const nlohmann::json& params, const api_caller& call);

  void list_tools(const call_ptr& c);
  void call_tool(const call_ptr& c);
  void run_code(const call_ptr& c, const nlohmann::json& args);
  void execute(const call_ptr& c, const std::string& sandbox_id, const std::string& spec,
               const std::string& language, const nlohmann::json& args, bool retry);
  void run_shell(const call_ptr& c, const nlohmann::json& args);
  void create_sandbox(const call_ptr& c, const nlohmann::json& args);
  void list_sandboxes(const call_ptr& c);
  void close_sandbox(const call_ptr& c, const nlohmann::json& args);
  void read_file(const call_ptr& c, const nlohmann::json& args);
  void write_file(const call_ptr& c, const nlohmann::json& args);
  void list_files(const call_ptr& c, const nlohmann::json& args);
  void list_resources(const call_ptr& c);
  void read_resource(const call_ptr& c);

  // The sandbox a tool call works in: its `sandbox_id`, the session's own
  // (made on first use), or a new one for a stateless call.
  void with_sandbox(const call_ptr& c, const nlohmann::json& args,
                    std::function<void(const std::string&)> then);
  // The kernelspecs (asked for once), then `then`.
  void with_kernelspecs(const call_ptr& c, std::function<void()> then);
  // The caller's kernel of `spec` in the sandbox: the one used before, one
  // running there, or a new one.
  void with_kernel(const call_ptr& c, const std::string& sandbox_id, const std::string& spec,
                   std::function<void(const std::string&)> then);
  // run_code's language: a kernelspec name, or a language one of them speaks.
  [[nodiscard]] std::string spec_for(const std::string& language) const;
  [[nodiscard]] std::vector<std::string> languages() const;

  // Answers: a result (decorated for the stateless version), a tool result, a protocol error.
  void answer(const call_ptr& c, nlohmann::json result, bool cacheable = false, bool private_cache = true);
  void fail(const call_ptr& c, const mcp::rpc_error& e);
  // A tool result reporting the REST API's refusal.
  void api_failed(const call_ptr& c, const response& res);
  void forget_idle_sessions();

  std::size_t sessions_per_principal_;
  std::chrono::seconds session_idle_;
  std::map<std::string, session> sessions_;
  std::map<std::string, std::string> kernels_;  // principal/sandbox/spec → kernel id
  // What waits for a sandbox or kernel being made (by key): its id, or the refusal.
  using waiter = std::function<void(const std::string& id, const response* refusal)>;
  std::map<std::string, std::vector<waiter>> pending_;
  // Runs `make` once for `key` while others wait for what it gives `done`.
  void once(const std::string& key, waiter then, const std::function<void(waiter done)>& make);
  nlohmann::json kernelspecs_;  // GET api/kernelspecs, once read
};

}  // namespace sandgate::gateway
