#include "mcp_tools.hpp"

#include <sandboxing/base64.hpp>

#include <boost/url.hpp>

#include <algorithm>
#include <array>
#include <regex>

namespace sandgate::gateway::mcp {
using json = nlohmann::json;

namespace {

const json sandbox_id_property = {
    {"type", "string"},
    {"description",
     "The sandbox to work in (from create_sandbox, or a result's sandbox_id). Without it, the MCP session's "
     "own "
     "sandbox; a client without a session gets a new sandbox, whose id the result names."}};

json object_schema(json properties, std::vector<std::string> required) {
  return {{"type", "object"},
          {"properties", std::move(properties)},
          {"required", std::move(required)},
          {"additionalProperties", false}};
}

// One of two types, as anyOf branches of one type each: clients that map
// schemas onto a single-type dialect (Gemini's function declarations) take it.
json either(const char* type, const char* other) {
  return {{"anyOf", json::array({{{"type", type}}, {{"type", other}}})}};
}

// The definitions, keyed by name, with run_code's language list filled in later.
const json& definitions() {
  static const json tools = [] {
    json t = json::array();
    t.push_back(
        {{"name", "run_code"},
         {"title", "Run code"},
         {"description",
          "Runs code in a persistent kernel inside an isolated sandbox. Variables, imports and files persist "
          "between calls in the same sandbox and language. Returns stdout, stderr, the value of the last "
          "expression, the error with its traceback, and charts and images (matplotlib figures, display()) "
          "as "
          "images."},
         {"inputSchema",
          object_schema({{"code", {{"type", "string"}, {"description", "The code to run."}}},
                         {"language", {{"type", "string"}, {"description", "The kernel's language."}}},
                         {"sandbox_id", sandbox_id_property},
                         {"timeout_s",
                          {{"type", "number"},
                           {"exclusiveMinimum", 0},
                           {"description", "Interrupt the code after this many seconds; its state stays."}}}},
                        {"code"})},
         {"outputSchema",
          object_schema({{"sandbox_id", {{"type", "string"}}},
                         {"kernel_id", {{"type", "string"}}},
                         {"language", {{"type", "string"}}},
                         {"status", {{"type", "string"}}},
                         {"execution_count", either("integer", "null")},
                         {"stdout", {{"type", "string"}}},
                         {"stderr", {{"type", "string"}}},
                         {"result", either("string", "null")},
                         {"error",
                          {{"anyOf", json::array({{{"type", "object"},
                                                   {"properties",
                                                    {{"ename", {{"type", "string"}}},
                                                     {"evalue", {{"type", "string"}}},
                                                     {"traceback", {{"type", "string"}}}}}},
                                                  {{"type", "null"}}})}}},
                         {"displays", {{"type", "integer"}}},
                         {"timed_out", {{"type", "boolean"}}},
                         {"kernel_restarted", {{"type", "boolean"}}},
                         {"truncated", {{"type", "boolean"}}}},
                        {"sandbox_id", "kernel_id", "language", "status", "stdout", "stderr"})},
         {"annotations", {{"destructiveHint", true}, {"idempotentHint", false}, {"openWorldHint", false}}}});
    t.push_back(
        {{"name", "run_shell"},
         {"title", "Run a shell command"},
         {"description",
          "Runs a command with bash -lc in a sandbox (working directory: /workspace unless cwd says "
          "otherwise) "
          "and returns its stdout, stderr and exit code when it ends."},
         {"inputSchema",
          object_schema({{"command", {{"type", "string"}, {"description", "The command line."}}},
                         {"cwd", {{"type", "string"}, {"description", "Relative to /workspace."}}},
                         {"sandbox_id", sandbox_id_property},
                         {"timeout_s", {{"type", "number"}, {"exclusiveMinimum", 0}}}},
                        {"command"})},
         {"outputSchema", object_schema({{"sandbox_id", {{"type", "string"}}},
                                         {"stdout", {{"type", "string"}}},
                                         {"stderr", {{"type", "string"}}},
                                         {"exit_code", either("integer", "null")},
                                         {"signal", either("integer", "null")},
                                         {"timed_out", {{"type", "boolean"}}},
                                         {"truncated", {{"type", "boolean"}}}},
                                        {"sandbox_id", "stdout", "stderr", "exit_code"})},
         {"annotations", {{"destructiveHint", true}, {"idempotentHint", false}, {"openWorldHint", false}}}});
    const json sandbox_schema = object_schema({{"sandbox_id", {{"type", "string"}}},
                                               {"expires_at", {{"type", "string"}}},
                                               {"metadata", {{"type", "object"}}},
                                               {"network", either("string", "object")}},
                                              {"sandbox_id", "expires_at"});
    t.push_back(
        {{"name", "create_sandbox"},
         {"title", "Create a sandbox"},
         {"description",
          "Creates an isolated sandbox (its own filesystem, processes and network policy) and returns its "
          "id. "
          "Pass the id as sandbox_id to the other tools to work in it."},
         {"inputSchema",
          object_schema(
              {{"ttl_s", {{"type", "integer"}, {"minimum", 1}, {"description", "Its time to live."}}},
               {"metadata",
                {{"type", "object"},
                 {"additionalProperties", {{"type", "string"}}},
                 {"description", "Labels (string values) to find it by."}}},
               {"network",
                {{"anyOf", either("string", "object")["anyOf"]},
                 {"description",
                  "\"none\", \"loopback\", \"allow\" with hosts, or \"open\", within the operator's "
                  "ceiling."}}}},
              {})},
         {"outputSchema", sandbox_schema},
         {"annotations", {{"destructiveHint", false}, {"idempotentHint", false}, {"openWorldHint", false}}}});
    t.push_back(
        {{"name", "list_sandboxes"},
         {"title", "List sandboxes"},
         {"description", "Lists the caller's sandboxes with their metadata and expiry."},
         {"inputSchema", object_schema(json::object(), {})},
         {"outputSchema",
          object_schema({{"sandboxes", {{"type", "array"}, {"items", sandbox_schema}}}}, {"sandboxes"})},
         {"annotations", {{"readOnlyHint", true}, {"openWorldHint", false}}}});
    t.push_back(
        {{"name", "close_sandbox"},
         {"title", "Close a sandbox"},
         {"description", "Deletes a sandbox with its kernels, processes and files."},
         {"inputSchema", object_schema({{"sandbox_id", {{"type", "string"}}}}, {"sandbox_id"})},
         {"outputSchema",
          object_schema({{"sandbox_id", {{"type", "string"}}}, {"closed", {{"type", "boolean"}}}},
                        {"sandbox_id", "closed"})},
         {"annotations", {{"destructiveHint", true}, {"idempotentHint", true}, {"openWorldHint", false}}}});
    const json path_property = {{"type", "string"}, {"description", "Absolute, or relative to /workspace."}};
    t.push_back(
        {{"name", "read_file"},
         {"title", "Read a file"},
         {"description",
          "Reads a file of a sandbox: text as text, images as images, other bytes as base64. start_line and "
          "end_line (1-based, inclusive) read part of a text file."},
         {"inputSchema", object_schema({{"path", path_property},
                                        {"sandbox_id", sandbox_id_property},
                                        {"start_line", {{"type", "integer"}, {"minimum", 1}}},
                                        {"end_line", {{"type", "integer"}, {"minimum", 1}}}},
                                       {"path"})},
         {"outputSchema", object_schema({{"sandbox_id", {{"type", "string"}}},
                                         {"path", {{"type", "string"}}},
                                         {"mime_type", {{"type", "string"}}},
                                         {"encoding", {{"type", "string"}, {"enum", {"utf-8", "base64"}}}},
                                         {"content", {{"type", "string"}}},
                                         {"size_bytes", {{"type", "integer"}}},
                                         {"truncated", {{"type", "boolean"}}}},
                                        {"sandbox_id", "path", "encoding", "content"})},
         {"annotations", {{"readOnlyHint", true}, {"openWorldHint", false}}}});
    t.push_back(
        {{"name", "write_file"},
         {"title", "Write a file"},
         {"description",
          "Writes a file in a sandbox (its directories are made), replacing what was there. content is text, "
          "or "
          "base64 with encoding \"base64\"."},
         {"inputSchema", object_schema({{"path", path_property},
                                        {"content", {{"type", "string"}}},
                                        {"encoding", {{"type", "string"}, {"enum", {"utf-8", "base64"}}}},
                                        {"sandbox_id", sandbox_id_property}},
                                       {"path", "content"})},
         {"outputSchema", object_schema({{"sandbox_id", {{"type", "string"}}},
                                         {"path", {{"type", "string"}}},
                                         {"size_bytes", {{"type", "integer"}}}},
                                        {"sandbox_id", "path", "size_bytes"})},
         {"annotations", {{"destructiveHint", true}, {"idempotentHint", true}, {"openWorldHint", false}}}});
    t.push_back(
        {{"name", "list_files"},
         {"title", "List files"},
         {"description", "Lists a directory of a sandbox (default: /workspace)."},
         {"inputSchema", object_schema({{"path", path_property}, {"sandbox_id", sandbox_id_property}}, {})},
         {"outputSchema", object_schema({{"sandbox_id", {{"type", "string"}}},
                                         {"path", {{"type", "string"}}},
                                         {"entries",
                                          {{"type", "array"},
                                           {"items",
                                            {{"type", "object"},
                                             {"properties",
                                              {{"name", {{"type", "string"}}},
                                               {"type", {{"type", "string"}}},
                                               {"size", {{"type", "integer"}}},
                                               {"uri", {{"type", "string"}}}}}}}}}},
                                        {"sandbox_id", "path", "entries"})},
         {"annotations", {{"readOnlyHint", true}, {"openWorldHint", false}}}});
    return t;
  }();
  return tools;
}

const json* definition(const std::string& name) {
  for (const auto& t : definitions())
    if (t["name"] == name) return &t;
  return nullptr;
}

bool has_type(const json& value, const std::string& type) {
  if (type == "string") return value.is_string();
  if (type == "integer") return value.is_number_integer();
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_boolean();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "null") return value.is_null();
  return false;
}

// "a string", "an object".
std::string with_article(const std::string& type) {
  const bool vowel = !type.empty() && std::string_view("aeiou").find(type[0]) != std::string_view::npos;
  return (vowel ? "an " : "a ") + type;
}

// Checks `value` against the keywords the definitions use.
std::optional<std::string> schema_error(const json& schema, const json& value, const std::string& where) {
  if (const auto any = schema.find("anyOf"); any != schema.end()) {
    std::string types;
    std::optional<std::string> only;  // the error of the one branch of the value's type
    for (const auto& branch : *any) {
      auto err = schema_error(branch, value, where);
      if (!err) return std::nullopt;
      const auto type = branch.value("type", std::string());
      types += (types.empty() ? "" : " or ") + with_article(type);
      if (has_type(value, type)) only = err;
    }
    return only ? only : where + " must be " + types;
  }
  if (const auto type = schema.find("type"); type != schema.end()) {
    const json types = type->is_array() ? *type : json::array({*type});
    if (std::none_of(types.begin(), types.end(), [&](const json& t) { return has_type(value, t); }))
      return where + " must be " +
             (types.size() == 1 ? with_article(types[0].get<std::string>()) : "one of " + types.dump());
  }
  if (const auto e = schema.find("enum");
      e != schema.end() && std::find(e->begin(), e->end(), value) == e->end())
    return where + " must be one of " + e->dump();
  if (const auto m = schema.find("minimum"); m != schema.end() && value.is_number() && value < *m)
    return where + " must be at least " + m->dump();
  if (const auto m = schema.find("exclusiveMinimum"); m != schema.end() && value.is_number() && value <= *m)
    return where + " must be greater than " + m->dump();
  if (!value.is_object()) return std::nullopt;
  const auto props = schema.value("properties", json::object());
  for (const auto& r : schema.value("required", json::array()))
    if (!value.contains(r.get<std::string>())) return where + "." + r.get<std::string>() + " is required";
  for (const auto& [key, v] : value.items()) {
    if (const auto p = props.find(key); p != props.end()) {
      if (auto err = schema_error(*p, v, where + "." + key)) return err;
    } else if (const auto extra = schema.find("additionalProperties"); extra != schema.end()) {
      if (extra->is_boolean() && !extra->get<bool>())
        return where + "." + key + " is not a parameter of this tool";
      if (extra->is_object())
        if (auto err = schema_error(*extra, v, where + "." + key)) return err;
    }
  }
  return std::nullopt;
}

// A bundle's text: a string, or the list of lines nbformat allows; nothing for another shape.
std::optional<std::string> joined_text(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (!value.is_array()) return std::nullopt;
  std::string out;
  for (const auto& line : value) {
    if (!line.is_string()) return std::nullopt;
    out += line.get_ref<const std::string&>();
  }
  return out;
}

std::string encode_segment(const std::string& s) {
  return boost::urls::encode(s, boost::urls::unreserved_chars);
}

}  // namespace

json tool_definitions(const std::vector<std::string>& languages) {
  json tools = definitions();
  for (auto& t : tools)
    if (t["name"] == "run_code") {
      auto& language = t["inputSchema"]["properties"]["language"];
      language["enum"] = languages;
      if (!languages.empty()) language["default"] = languages.front();
    }
  return tools;
}

bool is_tool(const std::string& name) {
  return definition(name) != nullptr;
}

std::optional<std::string> argument_error(const std::string& tool, const json& arguments) {
  const auto* d = definition(tool);
  if (!d) return "no tool " + tool;
  return schema_error((*d)["inputSchema"], arguments, "arguments");
}

json tool_error(const std::string& text) {
  return {{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", true}};
}

json tool_result(json structured) {
  json content = json::array({{{"type", "text"}, {"text", structured.dump()}}});
  return {{"content", std::move(content)}, {"structuredContent", std::move(structured)}, {"isError", false}};
}

std::string plain_text(const std::string& ansi) {
  static const std::regex colour("\x1b\\[[0-9;]*[A-Za-z]");
  return std::regex_replace(ansi, colour, "");
}

json code_result(const json& record, const std::string& sandbox_id, const std::string& kernel_id,
                 const std::string& language) {
  json content = json::array();
  const auto text = [&](const std::string& s) { content.push_back({{"type", "text"}, {"text", s}}); };
  const auto stdout_text = record.value("stdout", std::string());
  const auto stderr_text = record.value("stderr", std::string());
  if (!stdout_text.empty()) text(stdout_text);
  if (!stderr_text.empty()) text("[stderr]\n" + stderr_text);
  int displays = 0;
  for (const auto& out : record.value("outputs", json::array())) {
    const auto data = out.value("data", json::object());
    const bool is_result = out.value("output_type", std::string()) == "execute_result";
    bool shown = false;
    for (const char* mime : {"image/png", "image/jpeg"})
      if (const auto it = data.find(mime); it != data.end() && it->is_string()) {
        std::string b64 = it->get<std::string>();
        std::erase(b64, '\n');
        content.push_back({{"type", "image"}, {"data", std::move(b64)}, {"mimeType", mime}});
        shown = true;
      }
    if (const auto html = data.find("text/html"); html != data.end()) {
      if (auto body = joined_text(*html)) {
        content.push_back(
            {{"type", "resource"},
             {"resource",
              {{"uri", "sandgate://sandboxes/" + sandbox_id + "/outputs/" +
                           record.value("msg_id", std::string()) + "/" + std::to_string(displays) + ".html"},
               {"mimeType", "text/html"},
               {"text", std::move(*body)}}}});
        shown = true;
      }
    }
    if (is_result) continue;  // its text is `result`, below
    ++displays;
    if (!shown)
      if (const auto plain = data.find("text/plain"); plain != data.end())
        if (auto t = joined_text(*plain)) text(*t);
  }
  const auto result = record.value("result", json());
  if (result.is_string()) text(result.get<std::string>());
  json error = nullptr;
  if (const auto e = record.find("error"); e != record.end() && e->is_object()) {
    std::string traceback;
    for (const auto& line : e->value("traceback", json::array()))
      if (line.is_string()) traceback += plain_text(line.get<std::string>()) + "\n";
    error = {{"ename", e->value("ename", std::string())},
             {"evalue", e->value("evalue", std::string())},
             {"traceback", traceback}};
    text(traceback.empty() ? error["ename"].get<std::string>() + ": " + error["evalue"].get<std::string>()
                           : traceback);
  }
  const auto status = record.value("status", std::string("error"));
  const bool timed_out = record.value("timed_out", false);
  const bool restarted = record.value("kernel_restarted", false);
  if (timed_out)
    text(restarted ? "Timed out: the kernel did not stop and was restarted; its state is lost."
                   : "Timed out: the code was interrupted; the kernel keeps its state.");
  if (content.empty()) text(status == "ok" ? "(no output)" : "status: " + status);
  const auto count = record.value("execution_count", json());
  json structured{{"sandbox_id", sandbox_id},
                  {"kernel_id", kernel_id},
                  {"language", language},
                  {"status", status},
                  {"execution_count", count.is_number_integer() ? count : json()},
                  {"stdout", stdout_text},
                  {"stderr", stderr_text},
                  {"result", result.is_string() ? result : json()},
                  {"error", error},
                  {"displays", displays},
                  {"timed_out", timed_out},
                  {"kernel_restarted", restarted},
                  {"truncated", record.value("truncated", false)}};
  return {{"content", std::move(content)},
          {"structuredContent", std::move(structured)},
          {"isError", status != "ok"}};
}

json shell_result(const json& answer, const std::string& sandbox_id) {
  const auto exit_code = answer.value("exit_code", json());
  const auto signal = answer.value("signal", json());
  json structured{{"sandbox_id", sandbox_id},
                  {"stdout", answer.value("stdout", std::string())},
                  {"stderr", answer.value("stderr", std::string())},
                  {"exit_code", exit_code.is_number_integer() ? exit_code : json()},
                  {"signal", signal.is_number_integer() ? signal : json()},
                  {"timed_out", answer.value("timed_out", false)},
                  {"truncated", answer.value("truncated", false)}};
  json content = json::array();
  if (!structured["stdout"].get_ref<const std::string&>().empty())
    content.push_back({{"type", "text"}, {"text", structured["stdout"]}});
  if (!structured["stderr"].get_ref<const std::string&>().empty())
    content.push_back({{"type", "text"}, {"text", "[stderr]\n" + structured["stderr"].get<std::string>()}});
  std::string ending = exit_code.is_number_integer() ? "exit code " + exit_code.dump()
                       : signal.is_number_integer()  ? "killed by signal " + signal.dump()
                                                     : "ended";
  if (structured["timed_out"].get<bool>()) ending += " (timed out)";
  content.push_back({{"type", "text"}, {"text", ending}});
  const auto ended = answer.value("sandbox_ended", json());
  return {{"content", std::move(content)},
          {"structuredContent", std::move(structured)},
          {"isError", answer.value("timed_out", false) || !ended.is_null()}};
}

std::string mime_type_of(const std::string& path) {
  static const std::array<std::pair<const char*, const char*>, 12> types{{{".png", "image/png"},
                                                                          {".jpg", "image/jpeg"},
                                                                          {".jpeg", "image/jpeg"},
                                                                          {".gif", "image/gif"},
                                                                          {".webp", "image/webp"},
                                                                          {".svg", "image/svg+xml"},
                                                                          {".html", "text/html"},
                                                                          {".csv", "text/csv"},
                                                                          {".json", "application/json"},
                                                                          {".md", "text/markdown"},
                                                                          {".pdf", "application/pdf"},
                                                                          {".py", "text/x-python"}}};
  for (const auto& [ext, type] : types)
    if (path.ends_with(ext)) return type;
  return "application/octet-stream";
}

bool is_utf8(const std::string& bytes) {
  // nlohmann's strict UTF-8 check, through a dump that throws on invalid bytes.
  try {
    (void)json(bytes).dump();
    return bytes.find('\0') == std::string::npos;
  } catch (const json::type_error&) {
    return false;
  }
}

json file_result(const std::string& sandbox_id, const std::string& path, const std::string& bytes,
                 bool truncated) {
  const auto mime = mime_type_of(path);
  const bool image = mime.starts_with("image/") && mime != "image/svg+xml";
  const bool text = !image && is_utf8(bytes);
  json structured{{"sandbox_id", sandbox_id},
                  {"path", path},
                  {"mime_type", text && mime == "application/octet-stream" ? "text/plain" : mime},
                  {"encoding", text ? "utf-8" : "base64"},
                  {"content", text ? bytes : sandboxing::control::base64_encode(bytes)},
                  {"size_bytes", bytes.size()},
                  {"truncated", truncated}};
  json content = json::array();
  if (image)
    content.push_back({{"type", "image"}, {"data", structured["content"]}, {"mimeType", mime}});
  else if (text)
    content.push_back({{"type", "text"}, {"text", bytes}});
  else
    content.push_back(
        {{"type", "resource"},
         {"resource",
          {{"uri", file_uri(sandbox_id, path)}, {"mimeType", mime}, {"blob", structured["content"]}}}});
  if (truncated) content.push_back({{"type", "text"}, {"text", "(the file is longer; this is its start)"}});
  return {{"content", std::move(content)}, {"structuredContent", std::move(structured)}, {"isError", false}};
}

std::string file_uri(const std::string& sandbox_id, const std::string& path) {
  std::string uri = "sandgate://sandboxes/" + sandbox_id + "/files";
  std::string rest = path;
  if (rest.starts_with("/workspace/")) rest = rest.substr(11);
  if (rest.starts_with("/")) uri += "/~";  // outside the workspace: "~" then the absolute path
  std::size_t at = 0;
  while (at <= rest.size()) {
    const auto slash = rest.find('/', at);
    const auto segment = rest.substr(at, slash == std::string::npos ? std::string::npos : slash - at);
    if (!segment.empty()) uri += "/" + encode_segment(segment);
    if (slash == std::string::npos) break;
    at = slash + 1;
  }
  return uri;
}

std::optional<file_ref> parse_file_uri(const std::string& uri) {
  constexpr std::string_view prefix = "sandgate://sandboxes/";
  if (!uri.starts_with(prefix)) return std::nullopt;
  const auto rest = uri.substr(prefix.size());
  const auto slash = rest.find('/');
  if (slash == std::string::npos || rest.compare(slash, 7, "/files/") != 0) return std::nullopt;
  file_ref ref{rest.substr(0, slash), ""};
  auto path = rest.substr(slash + 7);
  bool absolute = false;
  if (path.starts_with("~/")) {
    absolute = true;
    path = path.substr(2);
  }
  const auto decoded = boost::urls::make_pct_string_view(path);
  if (!decoded || path.empty()) return std::nullopt;
  ref.path = (absolute ? "/" : "") + decoded->decode();
  if (ref.path.find('\0') != std::string::npos) return std::nullopt;
  return ref;
}

}  // namespace sandgate::gateway::mcp
