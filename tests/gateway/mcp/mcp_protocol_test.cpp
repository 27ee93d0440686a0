// MCP's framing without a gateway: one message per POST, the stateless
// version's header checks, the tools' argument checks and the results made
// from an execution record.
#include "mcp/mcp_protocol.hpp"
#include "mcp/mcp_tools.hpp"

#include <gtest/gtest.h>

namespace sandgate::gateway::mcp {
namespace {

using json = nlohmann::json;
namespace http = boost::beast::http;

rpc_error error_of(std::string_view body) {
  auto parsed = parse_message(body);
  EXPECT_TRUE(std::holds_alternative<rpc_error>(parsed)) << body;
  return std::holds_alternative<rpc_error>(parsed) ? std::get<rpc_error>(parsed) : rpc_error{};
}

TEST(mcp_message, each_kind_parses_and_bad_bodies_name_their_fault) {
  auto req = std::get<message>(parse_message(R"({"jsonrpc":"2.0","id":7,"method":"tools/list"})"));
  EXPECT_EQ(req.type, message::kind::request);
  EXPECT_EQ(req.id, 7);
  EXPECT_TRUE(req.params.is_object());
  EXPECT_EQ(
      std::get<message>(parse_message(R"({"jsonrpc":"2.0","method":"notifications/initialized"})")).type,
      message::kind::notification);
  EXPECT_EQ(std::get<message>(parse_message(R"({"jsonrpc":"2.0","id":"a","result":{}})")).type,
            message::kind::response);

  EXPECT_EQ(error_of("{nope").code, parse_error);
  // Nesting that would overflow the stack when the arguments are copied or written out.
  const std::string deep =
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_sandbox",)"
      R"("arguments":{"network":)" +
      std::string(200000, '[') + std::string(200000, ']') + "}}}";
  EXPECT_EQ(error_of(deep).code, parse_error);
  EXPECT_EQ(error_of(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])").code, invalid_request);
  EXPECT_EQ(error_of(R"({"id":1,"method":"ping"})").code, invalid_request);
  EXPECT_EQ(error_of(R"({"jsonrpc":"2.0","id":{"x":1},"method":"ping"})").code, invalid_request);
  EXPECT_EQ(error_of(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":[1]})").code, invalid_params);
  EXPECT_EQ(error_of(R"({"jsonrpc":"2.0","id":1})").code, invalid_request);
}

TEST(mcp_message, an_unknown_id_is_left_out_of_the_error) {
  const auto body = error_body({parse_error, "Parse error", nullptr, 400}, nullptr);
  EXPECT_FALSE(body.contains("id"));
  EXPECT_EQ(body["error"]["code"], parse_error);
  EXPECT_EQ(error_body({invalid_params, "x", nullptr, 400}, 3)["id"], 3);
}

message stateless_call(const std::string& name) {
  message m;
  m.id = 1;
  m.method = "tools/call";
  m.params = {{"name", name},
              {"_meta",
               {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                {"io.modelcontextprotocol/clientCapabilities", json::object()}}}};
  return m;
}

http::fields headers(const std::string& method, const std::string& name,
                     const std::string& version = "2026-07-28") {
  http::fields h;
  h.set("MCP-Protocol-Version", version);
  h.set("Mcp-Method", method);
  if (!name.empty()) h.set("Mcp-Name", name);
  return h;
}

TEST(mcp_stateless, headers_must_match_the_body) {
  const auto m = stateless_call("run_code");
  EXPECT_TRUE(is_stateless_request(m, http::fields{}));
  EXPECT_FALSE(check_stateless(m, headers("tools/call", "run_code")));
  EXPECT_FALSE(check_stateless(m, headers("tools/call", "=?base64?cnVuX2NvZGU=?=")));  // "run_code"
  EXPECT_EQ(check_stateless(m, headers("tools/call", "run_shell"))->code, header_mismatch);
  EXPECT_EQ(check_stateless(m, headers("tools/list", "run_code"))->code, header_mismatch);
  EXPECT_EQ(check_stateless(m, headers("tools/call", ""))->code, header_mismatch);
  EXPECT_EQ(check_stateless(m, headers("tools/call", "run_code", "2025-11-25"))->code, header_mismatch);
  EXPECT_EQ(check_stateless(m, headers("tools/call", "=?base64?***?="))->code, header_mismatch);

  auto old = m;
  old.params["_meta"]["io.modelcontextprotocol/protocolVersion"] = "1900-01-01";
  const auto e = check_stateless(old, headers("tools/call", "run_code", "1900-01-01"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, unsupported_version);
  EXPECT_EQ(e->data["requested"], "1900-01-01");
  EXPECT_EQ(e->data["supported"][0], "2026-07-28");

  auto no_caps = m;
  no_caps.params["_meta"].erase("io.modelcontextprotocol/clientCapabilities");
  EXPECT_EQ(check_stateless(no_caps, headers("tools/call", "run_code"))->code, invalid_params);
}

TEST(mcp_tools, arguments_are_checked_against_the_input_schema) {
  EXPECT_FALSE(argument_error("run_code", {{"code", "1+1"}}));
  EXPECT_FALSE(argument_error("run_code", {{"code", "1+1"}, {"timeout_s", 2.5}, {"sandbox_id", "x"}}));
  EXPECT_EQ(argument_error("run_code", json::object()), "arguments.code is required");
  EXPECT_EQ(argument_error("run_code", {{"code", 1}}), "arguments.code must be a string");
  EXPECT_EQ(argument_error("run_code", {{"code", "x"}, {"timeout_s", 0}}),
            "arguments.timeout_s must be greater than 0");
  EXPECT_EQ(argument_error("run_code", {{"code", "x"}, {"colour", "red"}}),
            "arguments.colour is not a parameter of this tool");
  EXPECT_EQ(argument_error("create_sandbox", {{"metadata", {{"k", 1}}}}),
            "arguments.metadata.k must be a string");
  EXPECT_EQ(argument_error("write_file", {{"path", "a"}, {"content", "b"}, {"encoding", "hex"}}),
            R"(arguments.encoding must be one of ["utf-8","base64"])");
  EXPECT_EQ(argument_error("create_sandbox", {{"network", 3}}),
            "arguments.network must be a string or an object");
  EXPECT_FALSE(argument_error("create_sandbox", {{"network", {{"mode", "none"}}}}));
  EXPECT_FALSE(is_tool("rm_rf"));
}

TEST(mcp_tools, a_record_becomes_text_images_and_html) {
  const json record = {{"msg_id", "m1"},
                       {"status", "error"},
                       {"execution_count", 4},
                       {"stdout", "hi\n"},
                       {"stderr", ""},
                       {"result", nullptr},
                       {"outputs",
                        {{{"output_type", "display_data"},
                          {"data", {{"image/png", "iVBO\nRw0K"}, {"text/plain", "<Figure>"}}}},
                         {{"output_type", "display_data"}, {"data", {{"text/html", "<b>x</b>"}}}}}},
                       {"error",
                        {{"ename", "ZeroDivisionError"},
                         {"evalue", "division by zero"},
                         {"traceback", {"\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"}}}},
                       {"timed_out", false},
                       {"kernel_restarted", false}};
  const auto r = code_result(record, "s1", "k1", "python");
  EXPECT_TRUE(r["isError"].get<bool>());
  const auto& content = r["content"];
  ASSERT_EQ(content.size(), 4u);
  EXPECT_EQ(content[0], (json{{"type", "text"}, {"text", "hi\n"}}));
  EXPECT_EQ(content[1], (json{{"type", "image"}, {"data", "iVBORw0K"}, {"mimeType", "image/png"}}));
  EXPECT_EQ(content[2]["type"], "resource");
  EXPECT_EQ(content[2]["resource"]["mimeType"], "text/html");
  EXPECT_EQ(content[2]["resource"]["text"], "<b>x</b>");
  EXPECT_EQ(content[3]["text"], "ZeroDivisionError: division by zero\n");
  EXPECT_EQ(r["structuredContent"]["error"]["ename"], "ZeroDivisionError");
  EXPECT_EQ(r["structuredContent"]["displays"], 2);
  EXPECT_EQ(r["structuredContent"]["sandbox_id"], "s1");
}

TEST(mcp_tools, file_uris_round_trip) {
  for (const std::string path : {"data/a b.csv", "/etc/os-release", "x%y?#.txt"}) {
    const auto uri = file_uri("s1", path);
    const auto back = parse_file_uri(uri);
    ASSERT_TRUE(back) << uri;
    EXPECT_EQ(back->sandbox_id, "s1");
    EXPECT_EQ(back->path, path) << uri;
  }
  EXPECT_EQ(file_uri("s1", "/workspace/out.png"), "sandgate://sandboxes/s1/files/out.png");
  EXPECT_FALSE(parse_file_uri("file:///etc/passwd"));
  EXPECT_FALSE(parse_file_uri("sandgate://sandboxes/s1/files/"));
  EXPECT_FALSE(parse_file_uri("sandgate://sandboxes/s1/files/a%00b"));
}

TEST(mcp_tools, files_are_text_images_or_blobs) {
  EXPECT_EQ(file_result("s", "a.txt", "hello", false)["content"][0]["text"], "hello");
  EXPECT_EQ(file_result("s", "a.png", "\x89PNG", false)["content"][0]["type"], "image");
  const auto blob = file_result("s", "a.bin", std::string("\xff\x00\x01", 3), false);
  EXPECT_EQ(blob["content"][0]["resource"]["blob"], "/wAB");
  EXPECT_EQ(blob["structuredContent"]["encoding"], "base64");
}

}  // namespace
}  // namespace sandgate::gateway::mcp
