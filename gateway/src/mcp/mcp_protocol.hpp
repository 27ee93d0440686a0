#pragma once
// MCP's JSON-RPC over Streamable HTTP: the versions served, one message of a
// POST body, the era a request belongs to (sessions with `initialize`, or the
// stateless 2026-07-28 with its per-request `_meta` and headers) and the
// error and result objects each era wants. No I/O.

#include <boost/beast/http/fields.hpp>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sandgate::gateway::mcp {

inline constexpr std::string_view stateless_version = "2026-07-28";
inline constexpr std::string_view latest_session_version = "2025-11-25";
// Every version served, newest first.
[[nodiscard]] const std::vector<std::string>& supported_versions();
// A version that `initialize` may settle on (one with sessions).
[[nodiscard]] bool is_session_version(std::string_view version);

enum error_code : int {
  parse_error = -32700,
  invalid_request = -32600,
  method_not_found = -32601,
  invalid_params = -32602,
  internal_error = -32603,
  resource_not_found = -32002,  // sessions' versions; 2026-07-28 uses invalid_params
  header_mismatch = -32020,
  unsupported_version = -32022,
};

// A protocol error: its JSON-RPC code and message, and the HTTP status it goes with.
struct rpc_error {
  int code = internal_error;
  std::string message;
  nlohmann::json data;  // null: none
  unsigned http_status = 400;
};

struct message {
  enum class kind { request, notification, response };
  kind type = kind::request;
  nlohmann::json id;  // a request's: a string or an integer
  std::string method;
  nlohmann::json params = nlohmann::json::object();
};

// The one message of a POST body, or the error to answer (not JSON, a batch,
// not JSON-RPC 2.0).
[[nodiscard]] std::variant<message, rpc_error> parse_message(std::string_view body);

// The era of a request that is not `initialize`: stateless when its `_meta`
// names a protocol version or its MCP-Protocol-Version header is the
// stateless one; else one of a session.
[[nodiscard]] bool is_stateless_request(const message& m, const boost::beast::http::fields& headers);

// A stateless request's checks (2026-07-28 "Request Metadata"): the version
// in `_meta` and in MCP-Protocol-Version, the client's capabilities, and the
// Mcp-Method and Mcp-Name headers against the body. Nothing when it passes.
[[nodiscard]] std::optional<rpc_error> check_stateless(const message& m,
                                                       const boost::beast::http::fields& headers);

// Mcp-Name's value as sent, or decoded from its "=?base64?…?=" form; nothing when malformed.
[[nodiscard]] std::optional<std::string> decode_name_header(std::string_view value);

// A JSON-RPC error object; the id is left out when it is not known (null).
[[nodiscard]] nlohmann::json error_body(const rpc_error& e, const nlohmann::json& id);
[[nodiscard]] nlohmann::json result_body(const nlohmann::json& id, nlohmann::json result);

}  // namespace sandgate::gateway::mcp
