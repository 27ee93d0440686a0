#include "completion.hpp"

#include <gtest/gtest.h>

namespace sandgate::shell_kernel {
namespace {

TEST(completion, first_word_is_a_command) {
  const auto query = analyse_completion("ech", 3);
  EXPECT_EQ(query.kind, completion_kind::command);
  EXPECT_EQ(query.word, "ech");
  EXPECT_EQ(query.start_bytes, 0u);
  EXPECT_EQ(query.end_bytes, 3u);
}

TEST(completion, command_position_after_operators_and_keywords) {
  for (const char* code : {"ls | gr", "true && gr", "x=1; gr", "if gr", "(gr", "then gr"}) {
    const std::string text = code;
    EXPECT_EQ(analyse_completion(text, text.size()).kind, completion_kind::command) << code;
  }
}

TEST(completion, arguments_are_files) {
  const std::string code = "ls /us";
  const auto query = analyse_completion(code, code.size());
  EXPECT_EQ(query.kind, completion_kind::file);
  EXPECT_EQ(query.word, "/us");
  EXPECT_EQ(query.start_bytes, 3u);
}

TEST(completion, a_path_in_command_position_is_a_file) {
  EXPECT_EQ(analyse_completion("./scr", 5).kind, completion_kind::file);
}

TEST(completion, variables_keep_their_sigil) {
  const std::string code = "echo $HO";
  const auto query = analyse_completion(code, code.size());
  EXPECT_EQ(query.kind, completion_kind::variable);
  EXPECT_EQ(query.word, "HO");
  EXPECT_EQ(query.sigil, "$");
  EXPECT_EQ(query.start_bytes, 5u);

  const std::string braced = "echo ${HO";
  const auto in_braces = analyse_completion(braced, braced.size());
  EXPECT_EQ(in_braces.kind, completion_kind::variable);
  EXPECT_EQ(in_braces.word, "HO");
  EXPECT_EQ(in_braces.sigil, "");
}

TEST(completion, cursor_in_the_middle) {
  const auto query = analyse_completion("cat fi other", 6);
  EXPECT_EQ(query.word, "fi");
  EXPECT_EQ(query.start_bytes, 4u);
  EXPECT_EQ(query.end_bytes, 6u);
}

TEST(completion, compgen_line_quotes_the_word) {
  completion_query query;
  query.word = "it's";
  query.kind = completion_kind::file;
  const auto line = compgen_line(query, 10);
  EXPECT_NE(line.find("compgen -f -- 'it'\\''s'"), std::string::npos) << line;
  EXPECT_NE(line.find("head -n 10"), std::string::npos);
}

TEST(completion, code_points_and_bytes) {
  const std::string text =
      "\xC3\xA9\xE2\x82\xAC"
      "a";  // é € a
  EXPECT_EQ(code_points_to_bytes(text, 0), 0u);
  EXPECT_EQ(code_points_to_bytes(text, 1), 2u);
  EXPECT_EQ(code_points_to_bytes(text, 2), 5u);
  EXPECT_EQ(code_points_to_bytes(text, 3), 6u);
  EXPECT_EQ(code_points_to_bytes(text, 9), 6u);
  EXPECT_EQ(bytes_to_code_points(text, 5), 2u);
  EXPECT_EQ(bytes_to_code_points(text, 6), 3u);
}

TEST(completion, single_quote) {
  EXPECT_EQ(single_quote("plain"), "'plain'");
  EXPECT_EQ(single_quote("a'b"), "'a'\\''b'");
  EXPECT_EQ(single_quote(""), "''");
}

}  // namespace
}  // namespace sandgate::shell_kernel
