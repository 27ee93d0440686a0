#include <jupyter_protocol/websocket.hpp>

#include <jupyter_protocol/errors.hpp>
#include <jupyter_protocol/json_members.hpp>
#include <jupyter_protocol/wire.hpp>

#include "fixtures.hpp"

#include <gtest/gtest.h>

namespace sandgate::protocol {
namespace {

TEST(websocket_v1, channel_names) {
  for (const auto c : {channel::shell, channel::iopub, channel::stdin_, channel::control, channel::hb}) {
    EXPECT_EQ(parse_channel(to_string(c)), c);
  }
  EXPECT_EQ(to_string(channel::stdin_), "stdin");
  EXPECT_FALSE(parse_channel("stdin_"));
  EXPECT_FALSE(parse_channel(""));
}

TEST(websocket_v1, encodes_as_jupyter_server_does_and_decodes_back) {
  for (const auto& g : testing::golden_cases()) {
    SCOPED_TRACE(g.name);
    auto frames = g.zmq_frames;
    message m;
    ASSERT_FALSE(decode(std::move(frames), signer{g.key}, m));
    EXPECT_EQ(encode_v1(*parse_channel(g.channel), m), g.v1);
    // The head, then the content and buffers as they are: the same bytes.
    std::string gathered = encode_v1_head(*parse_channel(g.channel), m) + m.content;
    for (const auto& b : m.buffers)
      gathered += b;
    EXPECT_EQ(gathered, g.v1);

    channel c = channel::hb;
    message back;
    ASSERT_FALSE(decode_v1(g.v1, c, back));
    EXPECT_EQ(to_string(c), g.channel);
    EXPECT_EQ(back.msg_id(), g.msg_id);
    EXPECT_EQ(back.parent.msg_id, g.parent_msg_id);
    const std::vector<std::string> expected(g.zmq_frames.begin() + static_cast<std::ptrdiff_t>(g.identities),
                                            g.zmq_frames.end());
    EXPECT_EQ(encode(back, signer{g.key}), expected);
  }
}

std::string u64(std::uint64_t v) {
  std::string out;
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>(v >> (8 * i)));
  return out;
}

// A v1 frame from parts, with a correct table unless `table` is given.
std::string v1_frame(const std::vector<std::string>& parts) {
  std::string out = u64(parts.size() + 1);
  std::uint64_t offset = 8 * (parts.size() + 2);
  out += u64(offset);
  for (const auto& p : parts)
    out += u64(offset += p.size());
  for (const auto& p : parts)
    out += p;
  return out;
}

TEST(websocket_v1, empty_parent_and_metadata_are_empty_objects) {
  channel c = channel::hb;
  message m;
  ASSERT_FALSE(
      decode_v1(v1_frame({"stdin", R"({"msg_id":"a","msg_type":"input_reply"})", "", "", "{}", "B"}), c, m));
  EXPECT_EQ(c, channel::stdin_);
  EXPECT_EQ(m.parent_header, "{}");
  EXPECT_EQ(m.metadata, "{}");
  EXPECT_EQ(m.buffers, std::vector<std::string>{"B"});
}

TEST(websocket_v1, malformed_inputs_each_have_their_error) {
  const std::string h = R"({"msg_id":"m","msg_type":"t","session":"s"})";
  const std::string good = v1_frame({"shell", h, "{}", "{}", "{}"});
  auto with_offset = [&](std::size_t index, std::uint64_t value) {
    std::string out = good;
    out.replace(8 * (index + 1), 8, u64(value));
    return out;
  };
  struct row {
    const char* name;
    std::string data;
    protocol_errc expected;
  };
  const std::vector<row> rows = {
      {"empty", "", protocol_errc::truncated_frame},
      {"short count", std::string(7, '\0'), protocol_errc::truncated_frame},
      {"too few offsets", u64(5) + std::string(40, '\0'), protocol_errc::bad_offsets},
      {"table truncated", u64(6) + std::string(20, '\0'), protocol_errc::truncated_frame},
      {"huge count", u64(~std::uint64_t{0}) + std::string(64, '\0'), protocol_errc::truncated_frame},
      {"first offset wrong", with_offset(0, 48), protocol_errc::bad_offsets},
      {"offsets descending", with_offset(2, 57), protocol_errc::bad_offsets},
      {"offset out of range", with_offset(5, good.size() + 1), protocol_errc::offset_out_of_range},
      {"huge offset", with_offset(3, ~std::uint64_t{0}), protocol_errc::offset_out_of_range},
      {"last offset short of the end", good + "x", protocol_errc::bad_offsets},
      {"truncated body", good.substr(0, good.size() - 1), protocol_errc::offset_out_of_range},
      {"unknown channel", v1_frame({"shel", h, "{}", "{}", "{}"}), protocol_errc::bad_channel},
      {"empty channel", v1_frame({"", h, "{}", "{}", "{}"}), protocol_errc::bad_channel},
      {"bad header json", v1_frame({"shell", "{", "{}", "{}", "{}"}), protocol_errc::bad_json},
      {"empty header", v1_frame({"shell", "", "{}", "{}", "{}"}), protocol_errc::bad_json},
      {"header not object", v1_frame({"shell", "[]", "{}", "{}", "{}"}), protocol_errc::not_an_object},
      {"header lacks msg_id", v1_frame({"shell", R"({"msg_type":"t"})", "{}", "{}", "{}"}),
       protocol_errc::missing_field},
      {"parent bad json", v1_frame({"shell", h, "{]", "{}", "{}"}), protocol_errc::bad_json},
      {"metadata not object", v1_frame({"shell", h, "{}", "1", "{}"}), protocol_errc::not_an_object},
      {"content bad json", v1_frame({"shell", h, "{}", "{}", "{\"a\":}"}), protocol_errc::bad_json},
      {"metadata nul then junk", v1_frame({"shell", h, "{}", std::string("{}\0junk", 7), "{}"}),
       protocol_errc::bad_json},
      {"content not object", v1_frame({"shell", h, "{}", "{}", "\"s\""}), protocol_errc::not_an_object},
      {"content nested too deep",
       v1_frame({"shell", h, "{}", "{}",
                 R"({"a":)" + std::string(max_json_depth, '[') + std::string(max_json_depth, ']') + "}"}),
       protocol_errc::bad_json},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    channel c = channel::hb;
    message m;
    m.content = "untouched";
    const auto ec = decode_v1(r.data, c, m);
    EXPECT_EQ(ec, r.expected) << ec.message();
    EXPECT_EQ(m.content, "untouched");
    EXPECT_EQ(c, channel::hb);
  }
  channel c = channel::hb;
  message m;
  EXPECT_FALSE(decode_v1(good, c, m));
  // As deep as allowed: the content object is the first level.
  const std::string deepest =
      R"({"a":)" + std::string(max_json_depth - 1, '[') + std::string(max_json_depth - 1, ']') + "}";
  EXPECT_FALSE(decode_v1(v1_frame({"shell", h, "{}", "{}", deepest}), c, m));
  EXPECT_EQ(m.content, deepest);
}

}  // namespace
}  // namespace sandgate::protocol
