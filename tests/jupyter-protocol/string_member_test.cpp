#include <jupyter_protocol/message.hpp>

#include <jupyter_protocol/json_members.hpp>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <array>
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

TEST(read_members, reads_strings_and_integers_in_one_pass) {
  std::array<json_member, 4> m{{{"status"}, {"execution_count"}, {"name"}, {"x"}}};
  ASSERT_TRUE(read_members(R"({"status":"ok","execution_count":-42,"user_expressions":{"a":[1,"b"]},)"
                           R"("na\u006de":"std\u006fut"})",
                           m));
  EXPECT_EQ(m[0].string, "ok");
  EXPECT_EQ(m[0].integer, std::nullopt);
  EXPECT_EQ(m[1].integer, -42);
  EXPECT_EQ(m[1].string, std::nullopt);
  EXPECT_EQ(m[2].string, "stdout");
  EXPECT_EQ(m[3].string, std::nullopt);
  EXPECT_EQ(m[3].integer, std::nullopt);
}

TEST(read_members, takes_only_integers_that_fit_and_the_last_of_repeated_keys) {
  std::array<json_member, 1> m{{{"n"}}};
  for (const char* text : {R"({"n":1.0})", R"({"n":1e2})", R"({"n":99999999999999999999})", R"({"n":null})",
                           R"({"n":[1]})", R"({"n":1,"n":"one","n":true})"}) {
    ASSERT_TRUE(read_members(text, m)) << text;
    EXPECT_EQ(m[0].integer, std::nullopt) << text;
    EXPECT_EQ(m[0].string, std::nullopt) << text;
  }
  ASSERT_TRUE(read_members(R"({"n":"one","n":7})", m));
  EXPECT_EQ(m[0].integer, 7);
  EXPECT_EQ(m[0].string, std::nullopt);
  // Nested members of the same name are not top-level.
  ASSERT_TRUE(read_members(R"({"a":{"n":5}})", m));
  EXPECT_EQ(m[0].integer, std::nullopt);
}

TEST(read_members, an_invalid_text_or_a_non_object_sets_nothing) {
  std::array<json_member, 1> m{{{"n"}}};
  for (const char* text : {R"({"n":3,})", R"({"n":3)", R"([{"n":3}])", "3", R"({"n":"\xff"})", ""}) {
    EXPECT_FALSE(read_members(text, m)) << text;
    EXPECT_EQ(m[0].integer, std::nullopt) << text;
    EXPECT_EQ(m[0].string, std::nullopt) << text;
  }
}

TEST(read_members, refuses_text_nested_deeper_than_max_json_depth) {
  std::array<json_member, 1> m{{{"data"}}};
  const auto with_data_depth = [](std::size_t depth) {  // the object itself is one level
    return R"({"data":)" + std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}";
  };
  EXPECT_TRUE(read_members(with_data_depth(max_json_depth), m));
  EXPECT_TRUE(m[0].raw);
  EXPECT_FALSE(read_members(with_data_depth(max_json_depth + 1), m));
  EXPECT_FALSE(m[0].raw);
  EXPECT_FALSE(read_members(with_data_depth(200000), m));
}

TEST(valid_json, any_valid_value_up_to_the_depth_given) {
  EXPECT_TRUE(valid_json("3"));
  EXPECT_TRUE(valid_json(R"( {"a":[1,{"b":null}]} )"));
  EXPECT_FALSE(valid_json(R"({"a":)"));
  EXPECT_FALSE(valid_json(""));
  EXPECT_TRUE(valid_json(std::string(max_json_depth, '[') + std::string(max_json_depth, ']')));
  EXPECT_FALSE(valid_json(std::string(max_json_depth + 1, '[') + std::string(max_json_depth + 1, ']')));
  EXPECT_TRUE(valid_json("[[[]]]", 3));
  EXPECT_FALSE(valid_json("[[[]]]", 2));
}

TEST(read_members, gives_each_members_value_text_whatever_its_type) {
  std::array<json_member, 6> m{{{"data"}, {"metadata"}, {"s"}, {"n"}, {"t"}, {"missing"}}};
  const std::string text =
      R"({ "data" : {"text/plain":"1","x":[{"data":2}]} , "metadata":{},"s":"a\"b","n":-1.5e3,"t":true })";
  ASSERT_TRUE(read_members(text, m));
  EXPECT_EQ(m[0].raw, R"({"text/plain":"1","x":[{"data":2}]})");
  EXPECT_EQ(m[1].raw, "{}");
  EXPECT_EQ(m[2].raw, R"("a\"b")");
  EXPECT_EQ(m[3].raw, "-1.5e3");
  EXPECT_EQ(m[4].raw, "true");
  EXPECT_EQ(m[5].raw, std::nullopt);
  // The text is a view into what was read.
  EXPECT_GE(m[0].raw->data(), text.data());
  EXPECT_LE(m[0].raw->data() + m[0].raw->size(), text.data() + text.size());
}

TEST(read_members, the_value_text_parses_to_what_a_document_holds_and_the_last_repeat_wins) {
  std::array<json_member, 2> m{{{"a"}, {"b"}}};
  for (const std::string text :
       {R"({"a":[],"b":[[[]],{"a":{}}]})", R"({"a":1,"a":{"k":"v"},"b":null})", R"({"\u0061":"esc","b":0})",
        R"({"b":"\ud83d\ude00","a":[1,2,{"b":[3]}]})", "{\"a\":\n{\n}\n,\"b\":\t\"x\"\n}"}) {
    ASSERT_TRUE(read_members(text, m)) << text;
    const auto doc = nlohmann::json::parse(text);
    for (const auto& member : m) {
      ASSERT_TRUE(member.raw.has_value()) << text << " " << member.key;
      EXPECT_EQ(nlohmann::json::parse(*member.raw), doc.at(std::string(member.key))) << text;
    }
  }
  // Nothing is set for an invalid text, even members met before the fault.
  EXPECT_FALSE(read_members(R"({"a":{},"b":)", m));
  EXPECT_EQ(m[0].raw, std::nullopt);
}

}  // namespace
}  // namespace sandgate::protocol
