#include "frame_codec.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sandgate::javascript_kernel {
namespace {

using namespace std::string_literals;

TEST(frame_codec, encodes_a_little_endian_length_then_the_payload) {
  EXPECT_EQ(encode_frame(""), "\0\0\0\0"s);
  EXPECT_EQ(encode_frame("{}"), "\x02\0\0\0{}"s);
  const std::string big(0x010203, 'x');
  const std::string frame = encode_frame(big);
  EXPECT_EQ(frame.substr(0, 4), "\x03\x02\x01\0"s);
  EXPECT_EQ(frame.size(), 4 + big.size());
}

TEST(frame_codec, decodes_frames_fed_a_byte_at_a_time) {
  const std::string stream = encode_frame(R"({"type":"ready"})") + encode_frame("") + encode_frame("é€");
  frame_decoder decoder;
  std::vector<std::string> out;
  for (char byte : stream) {
    decoder.feed(std::string_view(&byte, 1));
    while (auto payload = decoder.next()) {
      out.push_back(*payload);
    }
  }
  EXPECT_EQ(out, (std::vector<std::string>{R"({"type":"ready"})", "", "é€"}));
  EXPECT_EQ(decoder.pending_bytes(), 0u);
  EXPECT_FALSE(decoder.failed());
}

TEST(frame_codec, decodes_several_frames_fed_at_once_and_keeps_a_partial_one) {
  const std::string third = encode_frame("third");
  frame_decoder decoder;
  decoder.feed(encode_frame("first") + encode_frame("second") + third.substr(0, 6));
  EXPECT_EQ(decoder.next(), "first");
  EXPECT_EQ(decoder.next(), "second");
  EXPECT_EQ(decoder.next(), std::nullopt);
  EXPECT_EQ(decoder.pending_bytes(), 6u);
  decoder.feed(third.substr(6));
  EXPECT_EQ(decoder.next(), "third");
  EXPECT_EQ(decoder.next(), std::nullopt);
}

TEST(frame_codec, an_incomplete_length_is_not_a_frame) {
  frame_decoder decoder;
  decoder.feed("\x05\0\0"s);
  EXPECT_EQ(decoder.next(), std::nullopt);
  EXPECT_FALSE(decoder.failed());
}

TEST(frame_codec, a_length_over_the_limit_fails_the_stream) {
  frame_decoder decoder;
  decoder.feed("\xff\xff\xff\xff"s + "abc");
  EXPECT_EQ(decoder.next(), std::nullopt);
  EXPECT_TRUE(decoder.failed());
  decoder.feed(encode_frame("later"));
  EXPECT_EQ(decoder.next(), std::nullopt);  // nothing after it is trusted
  EXPECT_EQ(decoder.pending_bytes(), 0u);
}

TEST(frame_codec, a_payload_over_the_limit_is_refused) {
  const std::string huge(max_frame_bytes + 1, ' ');
  EXPECT_THROW(encode_frame(huge), std::length_error);
}

TEST(frame_codec, the_buffer_does_not_keep_decoded_bytes) {
  frame_decoder decoder;
  const std::string frame = encode_frame(std::string(1000, 'a'));
  for (int i = 0; i < 1000; ++i) {
    decoder.feed(frame.substr(0, 10));
    decoder.feed(frame.substr(10));
    ASSERT_EQ(decoder.next()->size(), 1000u);
  }
  EXPECT_EQ(decoder.pending_bytes(), 0u);
}

}  // namespace
}  // namespace sandgate::javascript_kernel
