#pragma once
// The REST API and the channels upgrade, with the paths, status codes and
// JSON shapes of jupyter_server / Kernel Gateway. Every error is JSON
// {"reason", "message"}; client faults get a 4xx, never a 500.

#include "../audit/audit_log.hpp"
#include "../auth/authenticator.hpp"
#include "../cluster/peer_directory.hpp"
#include "../kernels/execution_audit.hpp"
#include "../kernels/kernel_manager.hpp"
#include "../mcp/mcp_server.hpp"
#include "../sandboxes/port_urls.hpp"
#include "../sandboxes/workspace_files.hpp"
#include "sessions.hpp"

#include <gateway/config.hpp>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace sandgate::gateway {

// A request target below the base URL: percent-decoded path segments and query.
struct request_target {
  std::vector<std::string> segments;
  std::map<std::string, std::string> query;
};
std::optional<request_target> parse_target(std::string_view raw, std::string_view base_url);

// A request body that must be a JSON object (an empty body is {}); nothing,
// with `error` set, otherwise.
std::optional<nlohmann::json> body_object(const std::string& body, std::string& error);

// The OpenAPI document at `file` with `servers` set to the base URL, as
// text; empty (and logged) when it cannot be read.
[[nodiscard]] std::string load_openapi_document(const std::filesystem::path& file,
                                                const std::string& base_url);

// The HTTP status of a domain error.
[[nodiscard]] boost::beast::http::status status_of(fault kind);

// How a request to a port of a sandbox goes on (http/port_exchange).
struct port_rewrite {
  std::string target;                // the request-target the program sees
  bool strip_authorization = false;  // the gateway's token came in it
  std::string strip_cookie;          // a cookie of the gateway's own, by name
  std::string forwarded_for;         // the client's address
  std::string forwarded_proto;       // "http" or "https"
  std::string forwarded_prefix;      // the path route's prefix, or ""
  std::chrono::seconds idle{300};    // either side making no progress for this long ends the exchange
};

class router {
 public:
  using request = boost::beast::http::request<boost::beast::http::string_body>;
  using response = boost::beast::http::response<boost::beast::http::string_body>;
  using responder = std::function<void(boost::beast::http::message_generator&&)>;

  // A request whose body goes straight to a file in a sandbox's workspace
  // (PUT /api/sandboxes/{id}/files/{path}), read by the HTTP session.
  struct upload_job {
    std::shared_ptr<void> context;  // the request being answered
    std::shared_ptr<sandbox_entry> sandbox;
    std::unique_ptr<workspace_files> files;  // a workspace upload (files API)
    workspace_files::upload upload;
    // An upload anywhere in the sandbox (fs API): the supervisor's temporary
    // file beside the target, its descriptor, and the path as the client named it.
    std::string fs_temp;
    unique_fd fs_file;
    std::string fs_path;
    std::uint64_t max_bytes = 0;
    // Where the body goes.
    [[nodiscard]] int file() const { return files ? upload.file.get() : fs_file.get(); }
  };
  // What to do with a request whose header has been read.
  struct upload_start {
    std::optional<response> rejection;  // answer this and close
    std::shared_ptr<upload_job> job;    // or read the body into job->upload.file
  };

  // Throws std::runtime_error when the tokens file cannot be used. Audits
  // into `audit` (which outlives the router) the executions of the kernels
  // listed now and of every kernel it starts. `openapi_file`: the OpenAPI
  // document served at /api/openapi.json. Keeps /api/sessions in `reg`
  // (which outlives the router) and takes back those of the kernels listed now.
  // `peers` (outlives the router): the cluster's other nodes, whose parts
  // the lists of kernels, sandboxes and sessions include.
  router(const config& cfg, kernel_manager& kernels, registry& reg, std::string token, audit_log& audit,
         const std::filesystem::path& openapi_file, peer_directory& peers);

  void handle(request&& req, responder respond);
  // Before a request's body is read: the refusal (401 or 403, the
  // connection then closes) when its token is missing or wrong, so that no
  // unauthenticated client gets to hold a connection with a slow body; or
  // nothing.
  std::optional<response> refuse_before_body(const boost::beast::http::request_header<>& header);
  // Uploads stream to disk: true when this request is one (its body is not read yet).
  [[nodiscard]] bool is_upload(const boost::beast::http::request_header<>& header) const;
  // Calls `ready` with what to do (at once for the workspace; once the
  // supervisor made the temporary file for an upload elsewhere in the sandbox).
  void begin_upload(const boost::beast::http::request_header<>& header, responder respond,
                    const std::function<void(upload_start)>& ready);
  // The body will not be written: what was is dropped (nobody is answered).
  void abort_upload(const std::shared_ptr<upload_job>& job);
  // The body was read (ec: why not); answers through the job's responder.
  void finish_upload(const std::shared_ptr<upload_job>& job, boost::beast::error_code ec);
  // What a WebSocket upgrade of /api/kernels/{id}/channels that may go
  // ahead is granted: the kernel to join, as whom, in which protocol. The
  // HTTP layer makes the session; the router never sees the stream.
  struct channels_grant {
    std::shared_ptr<kernel> target;
    std::string session_id;
    std::string principal;
    bool v1 = false;                   // v1.kernel.websocket.jupyter.org, else the legacy JSON protocol
    memory_release* memory = nullptr;  // where freed output memory goes back to the system
  };
  // The grant for a WebSocket upgrade, or the rejection to send (the
  // connection then closes).
  std::variant<channels_grant, response> admit_channels(const request& req);
  // What a WebSocket upgrade of /api/sandboxes/{id}/processes/{pid}/attach
  // is granted: an attachment to the process (its end of the socketpair,
  // copied from the supervisor), for the HTTP layer to relay.
  struct process_grant {
    std::shared_ptr<sandbox_entry> sandbox;
    std::string process_id;
    sandboxing::unique_fd attachment;
    std::string principal;
  };
  // Asks the supervisor for the attachment: `done` gets the grant, or the
  // rejection to send (404 for a process it does not know).
  void admit_process(const request& req, std::function<void(std::variant<process_grant, response>)> done);
  // True when `req` upgrades a process's attach endpoint (else the kernel channels').
  [[nodiscard]] bool is_process_attach(const request& req) const;

  // A request for a port of a sandbox (ports_api.cpp), by host name or path.
  struct port_target {
    std::string sandbox_id;
    std::uint16_t port = 0;
    std::optional<std::uint16_t> valid_port;  // nothing: not a port number
    std::string prefix;                       // the path route's "…/ports/{port}", "" for the host route
    std::string target;  // the request-target below it ("" when the path route's slash is missing)
  };
  [[nodiscard]] std::optional<port_target> port_target_of(
      const boost::beast::http::request_header<>& header) const;
  struct port_grant {
    std::shared_ptr<sandbox_entry> sandbox;
    std::uint16_t port = 0;
    std::string principal;
    port_rewrite rewrite;
  };
  // Who may reach the port: the grant, or the answer (401, 404, or the
  // redirect that trades a signed URL's token for a cookie).
  std::variant<port_grant, response> admit_port(const boost::beast::http::request_header<>& header,
                                                const port_target& t, bool tls);
  // An audit line and a metric for each connection made to a port (outcome: "connected", "refused", ...).
  void note_port_connection(const port_grant& g, const std::string& outcome, const std::string& client);

  static response error_response(boost::beast::http::status status, std::string message, unsigned version,
                                 bool keep_alive);
  static response error_response_with_reason(boost::beast::http::status status, std::string reason,
                                             std::string message, unsigned version, bool keep_alive);

 private:
  // One request being answered. Asynchronous handlers keep it alive with
  // shared_from_this() until they reply.
  struct context : std::enable_shared_from_this<context> {
    const router* owner = nullptr;
    request req;
    responder respond;
    std::vector<std::string> parts;  // path segments after the base URL
    std::map<std::string, std::string> query;
    principal who;
    void reply(response&& res);  // adds CORS headers; answers once
    template <class Body>
    void reply_body(boost::beast::http::response<Body>&& res) {
      if (!respond) return;
      owner->add_cors(req, res.base());
      if (!res.has_content_length()) res.prepare_payload();
      auto r = std::move(respond);
      respond = nullptr;
      r(boost::beast::http::message_generator(std::move(res)));
    }
    response json(boost::beast::http::status status, const nlohmann::json& body) const;
    response error(boost::beast::http::status status, std::string message) const;
    // With the error's own reason (e.g. "expired"), not the status's phrase.
    response error(const domain_error& err) const;
    // 404; `gone` names why an id that existed went away.
    response not_found(std::string message, const std::optional<std::string>& gone) const;
    response empty(boost::beast::http::status status) const;
  };

  // What the id of a route names, for the answer to an id of another node.
  enum class resource { none, kernel, sandbox, session };
  struct route {
    boost::beast::http::verb method;
    std::string_view pattern;  // "api/kernels/{}/interrupt"; "{}" is captured, a final "**" matches the rest
    resource names;            // what the first "{}" is the id of
    void (*handle)(router&, context&, const std::vector<std::string>& args);
  };
  static const std::vector<route>& routes();
  // 404 naming the node for an id that another node made and this one does
  // not hold; nothing otherwise (strings that are not ids: the handler's 404).
  [[nodiscard]] std::optional<response> other_node(const request& req, resource names, const std::string& id);

  std::optional<response> authenticate(const request& req, const std::string& query_token, principal& who);
  // Parses the target, authenticates; false after answering.
  bool prepare(context& ctx);
  void add_cors(const request& req, boost::beast::http::fields& res) const;
  void dispatch(context& ctx);

  void get_api(context& ctx);
  void get_openapi(context& ctx);
  void get_metrics(context& ctx);
  void get_kernelspecs(context& ctx);
  void get_kernelspec(context& ctx, const std::string& name);
  void get_kernelspec_resource(context& ctx, const std::string& name, const std::string& file);
  [[nodiscard]] bool meant_for_this_node(context& ctx);  // false after answering
  void get_node(context& ctx);
  void patch_node(context& ctx);
  // This node's list (`local`), or, unless the caller asked for this node's
  // only, the cluster's: every peer's part appended.
  void reply_list(context& ctx, const std::string& target, nlohmann::json local);
  void list_kernels(context& ctx);
  // `sandbox_id`: from the path (POST /api/sandboxes/{id}/kernels), or the body's.
  void post_kernel(context& ctx, const std::string& sandbox_id = "");
  void get_kernel(context& ctx, const std::string& id);
  void delete_kernel(context& ctx, const std::string& id);
  void interrupt_kernel(context& ctx, const std::string& id);
  void restart_kernel(context& ctx, const std::string& id);
  void execute_code(context& ctx, const std::string& id);
  void get_execution(context& ctx, const std::string& id, const std::string& msg_id);
  void list_sessions(context& ctx);
  void post_session(context& ctx);
  void get_session(context& ctx, const std::string& id);
  void patch_session(context& ctx, const std::string& id);
  void delete_session(context& ctx, const std::string& id);
  void post_sandbox(context& ctx);
  void list_sandboxes(context& ctx);
  void get_sandbox(context& ctx, const std::string& id);
  void patch_sandbox(context& ctx, const std::string& id);
  void patch_sandbox_network(context& ctx, const std::string& id);
  void delete_sandbox(context& ctx, const std::string& id);
  void post_command(context& ctx, const std::shared_ptr<sandbox_entry>& s);
  // processes_api.cpp
  void post_process(context& ctx, const std::string& sandbox_id);
  void list_processes(context& ctx, const std::string& sandbox_id);
  void get_process(context& ctx, const std::string& sandbox_id, const std::string& id);
  void wait_process(context& ctx, const std::string& sandbox_id, const std::string& id);
  void signal_process(context& ctx, const std::string& sandbox_id, const std::string& id);
  void resize_process(context& ctx, const std::string& sandbox_id, const std::string& id);
  void write_process_stdin(context& ctx, const std::string& sandbox_id, const std::string& id);
  void delete_process(context& ctx, const std::string& sandbox_id, const std::string& id);
  // The caller's sandbox when `process_id` could name a process in it, or nothing (after answering 404).
  std::shared_ptr<sandbox_entry> own_process(context& ctx, const std::string& sandbox_id,
                                             const std::string& process_id);
  // Sends `op` to the sandbox's supervisor; answers its refusal (404 for an
  // unknown `process_id`), else hands `then` the reply's data.
  void ask_supervisor(context& ctx, const std::shared_ptr<sandbox_entry>& s, nlohmann::json op,
                      const std::string& process_id, std::function<void(const nlohmann::json&)> then);
  // mcp_api.cpp: the MCP endpoint, whose tools call this router as the caller.
  void mcp_request(context& ctx);
  // A refusal of a request to /mcp as MCP clients expect it: 401 with a Bearer challenge.
  static void as_mcp_refusal(response& res);
  // ports_api.cpp
  void list_ports(context& ctx, const std::string& sandbox_id);
  void post_port_url(context& ctx, const std::string& sandbox_id);
  // The 403 for a WebSocket from another origin than allowed, or nothing.
  [[nodiscard]] std::optional<response> refuse_cross_origin(const request& req) const;
  // GET, HEAD, PUT (a streamed upload that got here: malformed) and DELETE of /api/sandboxes/{id}/files/...
  void file_request(context& ctx, const std::string& sandbox_id);
  void get_file(context& ctx, const std::shared_ptr<sandbox_entry>& s, const std::string& path);
  void delete_file(context& ctx, const std::shared_ptr<sandbox_entry>& s, const std::string& path);
  upload_start begin_workspace_upload(const boost::beast::http::request_header<>& header, responder respond);
  void begin_fs_upload(const boost::beast::http::request_header<>& header, responder respond,
                       const std::function<void(upload_start)>& ready);
  void finish_fs_upload(const std::shared_ptr<upload_job>& job, boost::beast::error_code ec);
  // Sends an open regular file (`size` bytes; a Range request gets its part)
  // as the answer; `path` chooses its content type.
  void serve_file(context& ctx, unique_fd fd, std::uint64_t size, std::int64_t mtime_s,
                  const std::string& path, bool truncated = false);
  // fs_api.cpp: the sandbox's whole file tree, through its supervisor. `what`:
  // "" (the content: GET, HEAD, DELETE), "stat", "list", "mkdir", "rename".
  void fs_request(context& ctx, const std::string& sandbox_id, const std::string& what);
  void fs_read(context& ctx, const std::shared_ptr<sandbox_entry>& s);
  void fs_stat(context& ctx, const std::shared_ptr<sandbox_entry>& s);
  void fs_list(context& ctx, const std::shared_ptr<sandbox_entry>& s);
  void fs_mkdir(context& ctx, const std::shared_ptr<sandbox_entry>& s);
  void fs_rename(context& ctx, const std::shared_ptr<sandbox_entry>& s);
  void fs_delete(context& ctx, const std::shared_ptr<sandbox_entry>& s);
  // The query's path `key`, or nothing (after answering 400).
  std::optional<std::string> fs_path(context& ctx, const char* key);
  // Sends a file op to the supervisor; answers its refusal by errno, else hands `then` the reply's data.
  void ask_files(context& ctx, const std::shared_ptr<sandbox_entry>& s, nlohmann::json op,
                 std::function<void(const nlohmann::json&)> then);
  // The workspace of a sandbox, or nothing (after answering).
  std::unique_ptr<workspace_files> open_files(context& ctx, const sandbox_entry& s);
  // The file path of /api/sandboxes/{id}/files/{path...} from the raw target.
  [[nodiscard]] std::optional<std::string> file_path(const context& ctx) const;

  // A kernel this router started (or took back): its executions are
  // audited and, like its start, count as activity of its sandbox.
  const std::shared_ptr<kernel>& watch(const std::shared_ptr<kernel>& k);
  // An audit line for what the caller did.
  void audit(const context& ctx, std::string_view event, const nlohmann::ordered_json& fields) const;
  void audit_session_kernel(const context& ctx, const kernel& k, const std::string& session_id) const;

  // The caller's kernel, or nothing (after answering 404).
  std::shared_ptr<kernel> own_kernel(context& ctx, const std::string& id);
  [[nodiscard]] nlohmann::json kernel_model(const kernel& k) const;
  // The caller's sandbox, or nothing (after answering 404).
  std::shared_ptr<sandbox_entry> own_sandbox(context& ctx, const std::string& id);
  [[nodiscard]] nlohmann::json sandbox_model(const sandbox_entry& s) const;
  [[nodiscard]] nlohmann::json session_model(const session_record& s) const;
  [[nodiscard]] nlohmann::json kernelspec_model(const kernelspec& spec) const;

  const config& cfg_;
  kernel_manager& kernels_;
  peer_directory& peers_;
  session_store sessions_;  // written through to the registry
  authenticator auth_;
  audit_log& audit_;
  std::shared_ptr<execution_audit> execution_audit_;
  std::string openapi_;                   // the document's text; empty when it could not be read
  std::unique_ptr<port_urls> port_urls_;  // signs and checks ports' URLs
  std::unique_ptr<mcp_server> mcp_;
};

}  // namespace sandgate::gateway
