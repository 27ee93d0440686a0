#include <jupyter_protocol/message.hpp>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace sandgate::protocol {
namespace {

// What a parsed document says: the member when the text is an object and
// the member is a string.
std::optional<std::string> nlohmann_member(const std::string& text, const std::string& key) {
  const auto doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object()) return std::nullopt;
  const auto it = doc.find(key);
  if (it == doc.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

TEST(string_member, reads_status_content) {
  EXPECT_EQ(string_member(R"({"execution_state": "busy"})", "execution_state"), "busy");
  EXPECT_EQ(string_member(R"({"execution_state":"idle"})", "execution_state"), "idle");
  EXPECT_EQ(
      string_member(" \n{ \"a\" : 1 ,\t\"execution_state\"\r\n:\n \"starting\" }\n ", "execution_state"),
      "starting");
}

TEST(string_member, unescapes_keys_and_values) {
  EXPECT_EQ(string_member(R"({"execution_state": "bu\u0073y"})", "execution_state"), "busy");
  EXPECT_EQ(string_member(R"({"execution\u005fstate": "idle"})", "execution_state"), "idle");
  EXPECT_EQ(string_member(R"({"k": "a\"b\\c\/d\n"})", "k"), "a\"b\\c/d\n");
  EXPECT_EQ(string_member(R"({"k": "\uD83D\uDE00"})", "k"), "\xF0\x9F\x98\x80");
  // A key that only looks the same once escaped text is compared raw.
  EXPECT_EQ(string_member(R"({"execution\\u005fstate": "idle"})", "execution_state"), std::nullopt);
}

TEST(string_member, missing_or_not_a_string) {
  EXPECT_EQ(string_member("{}", "execution_state"), std::nullopt);
  EXPECT_EQ(string_member(R"({"state": "idle"})", "execution_state"), std::nullopt);
  EXPECT_EQ(string_member(R"({"execution_state": 1})", "execution_state"), std::nullopt);
  EXPECT_EQ(string_member(R"({"execution_state": null})", "execution_state"), std::nullopt);
  EXPECT_EQ(string_member(R"({"execution_state": ["idle"]})", "execution_state"), std::nullopt);
  EXPECT_EQ(string_member(R"({"execution_state": {"a": "idle"}})", "execution_state"), std::nullopt);
  EXPECT_EQ(string_member(R"({"execution_state": ""})", "execution_state"), "");
}

TEST(string_member, only_top_level_members) {
  EXPECT_EQ(string_member(R"({"a": {"execution_state": "busy"}})", "execution_state"), std::nullopt);
  EXPECT_EQ(string_member(R"({"a": [{"execution_state": "busy"}]})", "execution_state"), std::nullopt);
  EXPECT_EQ(
      string_member(R"({"a": {"execution_state": "busy"}, "execution_state": "idle"})", "execution_state"),
      "idle");
  EXPECT_EQ(string_member(R"(["execution_state", "busy"])", "execution_state"), std::nullopt);
  EXPECT_EQ(string_member(R"("execution_state")", "execution_state"), std::nullopt);
}

TEST(string_member, invalid_json_gives_nothing) {
  for (const char* text : {"", "{", R"({"execution_state": "busy")", R"({"execution_state": "busy",})",
                           R"({"execution_state": "busy"} x)", R"({"execution_state": "bu)",
                           "{\"execution_state\": \"b\xC3\"}", R"({"execution_state": "\x"})"})
    EXPECT_EQ(string_member(text, "execution_state"), std::nullopt) << text;
}

// The last of repeated keys counts, whatever its type, as in a parsed document.
TEST(string_member, agrees_with_a_parsed_document) {
  const std::vector<std::string> texts = {
      R"({"k": "a", "k": "b"})",        R"({"k": "a", "k": 2})",          R"({"k": 2, "k": "b"})",
      R"({"k": "a", "k": {"k": "c"}})", R"({"k": "a", "k": [1]})",        R"({"k": "a", "k": true})",
      R"({"k": "a", "\u006b": "b"})",   R"({"k": "a", "\u006b": false})", R"({"k": "\u00e9\t"})",
      R"({"k" : "x" , "j" : "y"})",     R"({"k": "a", "j": null})",
  };
  for (const auto& text : texts)
    EXPECT_EQ(string_member(text, "k"), nlohmann_member(text, "k")) << text;
}

}  // namespace
}  // namespace sandgate::protocol
