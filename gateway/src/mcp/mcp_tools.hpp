#pragma once
// The MCP server's tools: their definitions (input and output schemas) and
// the tool results made from the REST API's answers. No I/O.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace sandgate::gateway::mcp {

// tools/list's tools; `languages`: what run_code's `language` may be.
[[nodiscard]] nlohmann::json tool_definitions(const std::vector<std::string>& languages);
// Whether `name` is one of them.
[[nodiscard]] bool is_tool(const std::string& name);
// The first way `arguments` break the tool's input schema, or nothing.
[[nodiscard]] std::optional<std::string> argument_error(const std::string& tool,
                                                        const nlohmann::json& arguments);

// A tool result that reports a failure the model can act on.
[[nodiscard]] nlohmann::json tool_error(const std::string& text);
// A tool result with `structured` as its structuredContent and as JSON text.
[[nodiscard]] nlohmann::json tool_result(nlohmann::json structured);

// run_code's result from an execution record (POST /api/kernels/{id}/execute):
// stdout, stderr, the result and the error as text, each PNG or JPEG display
// as an image, HTML as an embedded resource.
[[nodiscard]] nlohmann::json code_result(const nlohmann::json& record, const std::string& sandbox_id,
                                         const std::string& kernel_id, const std::string& language);
// run_shell's from a command's answer (POST /api/sandboxes/{id}/commands).
[[nodiscard]] nlohmann::json shell_result(const nlohmann::json& answer, const std::string& sandbox_id);
// read_file's from the file's bytes (`truncated`: more were there).
[[nodiscard]] nlohmann::json file_result(const std::string& sandbox_id, const std::string& path,
                                         const std::string& bytes, bool truncated);

// The sandgate:// URI of a file of a sandbox (`path` as the fs API takes it) and back.
[[nodiscard]] std::string file_uri(const std::string& sandbox_id, const std::string& path);
struct file_ref {
  std::string sandbox_id;
  std::string path;
};
[[nodiscard]] std::optional<file_ref> parse_file_uri(const std::string& uri);
// The MIME type a file's name suggests, and whether its bytes are text to show as such.
[[nodiscard]] std::string mime_type_of(const std::string& path);
[[nodiscard]] bool is_utf8(const std::string& bytes);

// A traceback's text with the terminal colour codes kernels add removed.
[[nodiscard]] std::string plain_text(const std::string& ansi);

}  // namespace sandgate::gateway::mcp
