#include "json_scanner.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>

namespace sandgate::protocol::detail {
namespace {

// Every case must get the same verdict as nlohmann::json::accept.
TEST(json_scanner, agrees_with_nlohmann) {
  const std::vector<std::string> texts = {
      "{}",
      "[]",
      " {} ",
      "\t\n\r{}\n",
      "{",
      "}",
      "[",
      "[1,]",
      "[,1]",
      "{,}",
      "{\"a\":1,}",
      "{\"a\"}",
      "{\"a\":}",
      "{\"a\" 1}",
      "{1:2}",
      "{\"a\":1 \"b\":2}",
      "\"str\"",
      "1",
      "-0",
      "-",
      "01",
      "1.",
      "1.5",
      ".5",
      "1e5",
      "1E+5",
      "1e-5",
      "1e",
      "1e+",
      "-1.5e10",
      "true",
      "false",
      "null",
      "tru",
      "nul",
      "True",
      "truex",
      "[true,false,null]",
      "{\"a\":[{\"b\":[[]]}]}",
      "[[[[[[[[]]]]]]]]",
      "[[[[[[[[]]]]]]]",
      "\"\\u0000\"",
      "\"\\uD83D\\uDE00\"",
      "\"\\uD83D\"",
      "\"\\uDE00\"",
      "\"\\uD83Dx\"",
      "\"\\uD83D\\u0041\"",
      "\"\\u12\"",
      "\"\\uGGGG\"",
      "\"\\x\"",
      "\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"",
      "\"\t\"",
      "\"\x01\"",
      "\"\x7f\"",
      "\"\xc3\xa9\"",
      "\"\xc3\"",
      "\"\xc0\x80\"",
      "\"\xe0\x80\x80\"",
      "\"\xed\xa0\x80\"",
      "\"\xef\xbf\xbf\"",
      "\"\xf0\x9f\x98\x80\"",
      "\"\xf4\x90\x80\x80\"",
      "\"\xf5\x80\x80\x80\"",
      "\"\xff\"",
      "\"\x80\"",
      "{} {}",
      "{}x",
      "",
      " ",
      "\"unterminated",
      "[1 2]",
      "{\"a\":1}  ",
      "[1e999]",
      "-1e-999",
      "123456789012345678901234567890",
      "{\"msg_id\":\"a\",\"nested\":{\"msg_id\":\"b\"},\"list\":[\"c\"]}"};
  for (const auto& text : texts) {
    SCOPED_TRACE(text);
    const auto root = scan_json(text);
    EXPECT_EQ(root != json_root::invalid, nlohmann::json::accept(text));
    if (root != json_root::invalid) {
      EXPECT_EQ(root == json_root::object, nlohmann::json::parse(text).is_object());
    }
  }
}

TEST(json_scanner, rejects_nul_anywhere) {
  EXPECT_EQ(scan_json(std::string("{}\0", 3)), json_root::invalid);
  EXPECT_EQ(scan_json(std::string("\"a\0\"", 4)), json_root::invalid);
}

TEST(json_scanner, deep_nesting_does_not_recurse) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  EXPECT_EQ(scan_json(deep), json_root::other);
  EXPECT_EQ(scan_json(std::string(200000, '[')), json_root::invalid);
}

TEST(json_scanner, nesting_past_max_depth_is_invalid) {
  const auto nested = [](std::size_t depth, char open, char close) {
    return std::string(depth, open) + std::string(depth, close);
  };
  EXPECT_EQ(scan_json(nested(3, '[', ']'), nullptr, 3), json_root::other);
  EXPECT_EQ(scan_json(nested(4, '[', ']'), nullptr, 3), json_root::invalid);
  EXPECT_EQ(scan_json(R"({"a":{"b":[1]}})", nullptr, 3), json_root::object);
  EXPECT_EQ(scan_json(R"({"a":{"b":[[1]]}})", nullptr, 3), json_root::invalid);
  // Brackets inside strings are text, not nesting.
  EXPECT_EQ(scan_json(R"({"a":"[[[[[[{{{{"})", nullptr, 1), json_root::object);
  // Depth is how deep containers are open at once, not how many there are.
  EXPECT_EQ(scan_json("[" + std::string("[],") + "[]]", nullptr, 2), json_root::other);
}

class collect final : public top_level_strings {
 public:
  void on_string(std::string_view key, bool key_escaped, std::string_view value,
                 bool value_escaped) override {
    std::string k;
    std::string v;
    if (key_escaped) {
      unescape_json_string(key, k);
    } else {
      k = key;
    }
    if (value_escaped) {
      unescape_json_string(value, v);
    } else {
      v = value;
    }
    seen[k] = v;
  }
  std::map<std::string, std::string> seen;
};

TEST(json_scanner, reports_top_level_strings_decoded) {
  const std::string text =
      R"({"a":"1","n":{"b":"inner"},"l":["x"],"e":"q\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00","k\u0065y":"v","num":5})";
  collect c;
  ASSERT_EQ(scan_json(text, &c), json_root::object);
  const auto expected = nlohmann::json::parse(text);
  EXPECT_EQ(c.seen.size(), 3u);
  EXPECT_EQ(c.seen["a"], "1");
  EXPECT_EQ(c.seen["e"], expected["e"].get<std::string>());
  EXPECT_EQ(c.seen["key"], "v");
  EXPECT_EQ(c.seen.count("b"), 0u);
}

// Strings are skipped 16 bytes (SSE2) or 8 bytes at a time: a byte that
// needs a look lands at every offset of a block and just past it, and the
// verdict still matches nlohmann's.
TEST(json_scanner, a_special_byte_at_any_offset_of_a_long_string) {
  const std::vector<std::string> specials = {"\x01", "\x1f",     "\"",   "\\n",
                                             "\\",   "\xc3\xa9", "\xff", "\xe2\x82"};
  for (std::size_t at = 0; at <= 40; ++at) {
    for (const auto& special : specials) {
      const std::string text = "\"" + std::string(at, 'x') + special + std::string(40 - at, 'y') + "\"";
      SCOPED_TRACE(testing::Message() << "offset " << at << ", byte " << static_cast<int>(special[0]));
      EXPECT_EQ(scan_json(text) != json_root::invalid, nlohmann::json::accept(text));
    }
  }
}
}  // namespace
}  // namespace sandgate::protocol::detail
