#include "mcp_protocol.hpp"

#include "../util/json_input.hpp"

#include <sandboxing/base64.hpp>

namespace sandgate::gateway::mcp {
using json = nlohmann::json;

namespace {

constexpr std::string_view version_key = "io.modelcontextprotocol/protocolVersion";
constexpr std::string_view capabilities_key = "io.modelcontextprotocol/clientCapabilities";

rpc_error mismatch(std::string message) {
  return {header_mismatch, "Header mismatch: " + std::move(message), nullptr, 400};
}

const json* meta_of(const message& m) {
  const auto it = m.params.find("_meta");
  return it != m.params.end() && it->is_object() ? &*it : nullptr;
}

// The value a header of the body must carry: params.name or params.uri.
std::optional<std::string> name_in_body(const message& m) {
  const char* key = m.method == "resources/read" ? "uri" : "name";
  const auto it = m.params.find(key);
  if (it == m.params.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

}  // namespace

const std::vector<std::string>& supported_versions() {
  static const std::vector<std::string> versions{std::string(stateless_version),
                                                 std::string(latest_session_version), "2025-06-18"};
  return versions;
}

bool is_session_version(std::string_view version) {
  return version == latest_session_version || version == "2025-06-18";
}

std::variant<message, rpc_error> parse_message(std::string_view body) {
  // Bounded nesting: the message is copied and written out, which recurses once per level.
  json doc = parse_json(body);
  if (doc.is_discarded())
    return rpc_error{parse_error, "Parse error: the body is not JSON, or nests too deep", nullptr, 400};
  if (doc.is_array())
    return rpc_error{invalid_request, "Invalid request: batches are not supported by this protocol version",
                     nullptr, 400};
  if (!doc.is_object() || doc.value("jsonrpc", json()) != "2.0")
    return rpc_error{invalid_request, "Invalid request: not a JSON-RPC 2.0 message", nullptr, 400};
  message m;
  const auto id = doc.find("id");
  const bool has_id = id != doc.end();
  if (has_id && !id->is_string() && !id->is_number_integer())
    return rpc_error{invalid_request, "Invalid request: \"id\" must be a string or an integer", nullptr, 400};
  if (has_id) m.id = *id;
  const auto method = doc.find("method");
  if (method == doc.end()) {
    if (!has_id || (!doc.contains("result") && !doc.contains("error")))
      return rpc_error{invalid_request, "Invalid request: no \"method\"", nullptr, 400};
    m.type = message::kind::response;
    return m;
  }
  if (!method->is_string())
    return rpc_error{invalid_request, "Invalid request: \"method\" must be a string", m.id, 400};
  m.method = method->get<std::string>();
  m.type = has_id ? message::kind::request : message::kind::notification;
  if (const auto params = doc.find("params"); params != doc.end() && !params->is_null()) {
    if (!params->is_object())
      return rpc_error{invalid_params, "Invalid params: \"params\" must be an object", nullptr, 400};
    m.params = std::move(*params);
  }
  return m;
}

bool is_stateless_request(const message& m, const boost::beast::http::fields& headers) {
  if (const auto* meta = meta_of(m); meta && meta->contains(version_key)) return true;
  return headers["MCP-Protocol-Version"] == stateless_version;
}

std::optional<std::string> decode_name_header(std::string_view value) {
  constexpr std::string_view open = "=?base64?", close = "?=";
  if (!value.starts_with(open) || !value.ends_with(close) || value.size() < open.size() + close.size())
    return std::string(value);
  return sandboxing::control::base64_decode(
      value.substr(open.size(), value.size() - open.size() - close.size()));
}

std::optional<rpc_error> check_stateless(const message& m, const boost::beast::http::fields& headers) {
  const auto* meta = meta_of(m);
  const auto version = meta ? meta->find(version_key) : json::const_iterator();
  if (!meta || version == meta->end() || !version->is_string())
    return rpc_error{invalid_params,
                     "Invalid params: _meta[\"" + std::string(version_key) + "\"] is required", nullptr, 400};
  const auto requested = version->get<std::string>();
  if (requested != stateless_version)
    return rpc_error{unsupported_version,
                     "Unsupported protocol version",
                     {{"supported", supported_versions()}, {"requested", requested}},
                     400};
  if (const auto caps = meta->find(capabilities_key); caps == meta->end() || !caps->is_object())
    return rpc_error{invalid_params,
                     "Invalid params: _meta[\"" + std::string(capabilities_key) + "\"] is required", nullptr,
                     400};
  const auto header_version = headers["MCP-Protocol-Version"];
  if (header_version.empty()) return mismatch("the MCP-Protocol-Version header is required");
  if (header_version != requested)
    return mismatch("MCP-Protocol-Version header value '" + std::string(header_version) +
                    "' does not match body value '" + requested + "'");
  const auto method = headers["Mcp-Method"];
  if (method.empty()) return mismatch("the Mcp-Method header is required");
  if (method != m.method)
    return mismatch("Mcp-Method header value '" + std::string(method) + "' does not match body value '" +
                    m.method + "'");
  if (m.type == message::kind::request &&
      (m.method == "tools/call" || m.method == "resources/read" || m.method == "prompts/get")) {
    const auto raw = headers["Mcp-Name"];
    if (raw.empty()) return mismatch("the Mcp-Name header is required for " + m.method);
    const auto name = decode_name_header(raw);
    if (!name) return mismatch("the Mcp-Name header is not valid base64");
    const auto body_name = name_in_body(m);
    if (!body_name || *body_name != *name)
      return mismatch("Mcp-Name header value '" + *name + "' does not match body value '" +
                      body_name.value_or("") + "'");
  }
  return std::nullopt;
}

json error_body(const rpc_error& e, const json& id) {
  json error{{"code", e.code}, {"message", e.message}};
  if (!e.data.is_null()) error["data"] = e.data;
  json out{{"jsonrpc", "2.0"}};
  if (!id.is_null()) out["id"] = id;
  out["error"] = std::move(error);
  return out;
}

json result_body(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

}  // namespace sandgate::gateway::mcp
