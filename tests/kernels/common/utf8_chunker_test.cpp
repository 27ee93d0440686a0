#include "sandgate_kernels/utf8_chunker.hpp"

#include <gtest/gtest.h>

namespace sandgate::kernels {
namespace {

const std::string replacement = "\xEF\xBF\xBD";

TEST(utf8_chunker, passes_ascii_and_complete_sequences) {
  utf8_chunker chunker;
  EXPECT_EQ(chunker.feed("abc \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "abc \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(chunker.finish(), "");
}

TEST(utf8_chunker, holds_back_a_sequence_cut_between_chunks) {
  utf8_chunker chunker;
  EXPECT_EQ(chunker.feed("x\xE2\x82"), "x");
  EXPECT_EQ(chunker.feed("\xAC"), "\xE2\x82\xAC");
  EXPECT_EQ(chunker.feed("\xF0"), "");
  EXPECT_EQ(chunker.feed("\x9F"), "");
  EXPECT_EQ(chunker.feed("\x98\x80!"), "\xF0\x9F\x98\x80!");
}

TEST(utf8_chunker, every_split_point_gives_the_same_text) {
  const std::string text = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80z";
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    utf8_chunker chunker;
    std::string out = chunker.feed(text.substr(0, cut));
    out += chunker.feed(text.substr(cut));
    out += chunker.finish();
    EXPECT_EQ(out, text) << "cut at " << cut;
  }
}

struct invalid_case {
  const char* name;
  std::string input;
  std::string expected;
};

TEST(utf8_chunker, replaces_invalid_bytes) {
  const invalid_case cases[] = {
      {"lone continuation",
       "a\x80"
       "b",
       "a" + replacement + "b"},
      {"overlong two-byte", "\xC0\xAF", replacement + replacement},
      {"overlong three-byte", "\xE0\x80\xAF", replacement + replacement + replacement},
      {"surrogate", "\xED\xA0\x80", replacement + replacement + replacement},
      {"above U+10FFFF", "\xF4\x90\x80\x80", replacement + replacement + replacement + replacement},
      {"truncated then ascii", "\xE2\x82z", replacement + "z"},
      {"invalid lead", "\xFF", replacement},
  };
  for (const auto& c : cases) {
    utf8_chunker chunker;
    EXPECT_EQ(chunker.feed(c.input) + chunker.finish(), c.expected) << c.name;
  }
}

TEST(utf8_chunker, finish_replaces_a_dangling_prefix) {
  utf8_chunker chunker;
  EXPECT_EQ(chunker.feed("ok\xE2\x82"), "ok");
  EXPECT_EQ(chunker.finish(), replacement);
  EXPECT_EQ(chunker.finish(), "");
}

}  // namespace
}  // namespace sandgate::kernels
