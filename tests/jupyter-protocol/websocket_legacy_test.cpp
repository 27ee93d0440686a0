#include <jupyter_protocol/websocket.hpp>

#include <jupyter_protocol/errors.hpp>
#include <jupyter_protocol/json_members.hpp>
#include <jupyter_protocol/wire.hpp>

#include "fixtures.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace sandgate::protocol {
namespace {

using nlohmann::json;

message decode_golden(const testing::golden_case& g) {
  auto frames = g.zmq_frames;
  message m;
  EXPECT_FALSE(decode(std::move(frames), signer{g.key}, m));
  return m;
}

std::vector<std::string> without_identities(const testing::golden_case& g) {
  return {g.zmq_frames.begin() + static_cast<std::ptrdiff_t>(g.identities), g.zmq_frames.end()};
}

// Splits serialize_binary_message's layout into its parts.
std::vector<std::string> split_legacy_binary(const std::string& data) {
  const auto u32 = [&](std::size_t pos) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i)
      v = (v << 8) | static_cast<unsigned char>(data.at(pos + i));
    return v;
  };
  const std::uint32_t n = u32(0);
  std::vector<std::string> parts;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::size_t begin = u32(4 * (i + 1));
    const std::size_t end = i + 1 < n ? u32(4 * (i + 2)) : data.size();
    parts.push_back(data.substr(begin, end - begin));
  }
  return parts;
}

TEST(websocket_legacy, encodes_as_the_notebook_server_does) {
  for (const auto& g : testing::golden_cases()) {
    SCOPED_TRACE(g.name);
    const auto m = decode_golden(g);
    const auto frame = encode_legacy(*parse_channel(g.channel), m);
    EXPECT_EQ(frame.binary, g.legacy_binary);
    if (g.legacy_exact) {
      EXPECT_EQ(frame.data, g.legacy);
    } else {
      // The Notebook server escapes non-ASCII; Sandgate keeps the kernel's bytes.
      // It also rewrites dates (dropping zero microseconds); compare those apart.
      ASSERT_FALSE(frame.binary);
      auto ours = json::parse(frame.data);
      auto theirs = json::parse(g.legacy);
      EXPECT_EQ(ours["header"]["date"], g.date);
      for (auto* j : {&ours, &theirs}) {
        (*j)["header"].erase("date");
        (*j)["parent_header"].erase("date");
      }
      EXPECT_EQ(ours, theirs);
      EXPECT_NE(frame.data.find(m.content), std::string::npos);
    }
    if (frame.binary) {
      const auto ours = split_legacy_binary(frame.data);
      ASSERT_EQ(ours.size(), 1 + m.buffers.size());
      EXPECT_EQ(std::vector<std::string>(ours.begin() + 1, ours.end()), m.buffers);
      EXPECT_FALSE(json::parse(ours[0]).contains("buffers"));
    }
  }
}

TEST(websocket_legacy, decodes_what_the_notebook_server_sends) {
  for (const auto& g : testing::golden_cases()) {
    SCOPED_TRACE(g.name);
    channel c = channel::hb;
    message m;
    ASSERT_FALSE(decode_legacy(g.legacy, g.legacy_binary, c, m));
    EXPECT_EQ(to_string(c), g.channel);
    EXPECT_EQ(m.msg_id(), g.msg_id);
    EXPECT_EQ(m.parent.msg_id, g.parent_msg_id);
    const auto original = decode_golden(g);
    EXPECT_EQ(json::parse(m.content), json::parse(original.content));
    EXPECT_EQ(m.buffers, original.buffers);
  }
}

TEST(websocket_legacy, client_frames_become_the_frames_jupyter_client_makes) {
  for (const auto& g : testing::golden_cases()) {
    SCOPED_TRACE(g.name);
    channel c = channel::hb;
    message m;
    ASSERT_FALSE(decode_legacy(g.client_legacy, g.client_legacy_binary, c, m));
    EXPECT_EQ(to_string(c), g.channel);
    EXPECT_EQ(m.msg_id(), g.msg_id);
    EXPECT_EQ(m.session(), g.session);
    const auto expected = without_identities(g);
    const auto frames = encode(m, signer{g.key});
    if (g.client_ascii) {
      EXPECT_EQ(frames, expected);
    } else {
      ASSERT_EQ(frames.size(), expected.size());
      for (std::size_t i = 2; i < 6; ++i)
        EXPECT_EQ(json::parse(frames[i]), json::parse(expected[i]));
    }
  }
}

TEST(websocket_legacy, keeps_raw_member_text) {
  const std::string header =
      "{ \"msg_id\" : \"m\\u0031\", \"msg_type\":\"execute_request\" ,\"session\":\"s\"}";
  const std::string content =
      "{\"code\": \"a = '}]\\\"\\\\'\\n\",\n\t\"x\" : [ {}, [], \"\xe2\x82\xac\\ud83d\\ude00\" ] }";
  const std::string metadata = "{\"n\":1.0e+00}";
  const std::string text = "\n{ \"channel\" : \"sh\\u0065ll\", \"header\" :" + header +
                           ",\"content\":   " + content + " , \"metadata\":" + metadata +
                           ", \"parent_header\": {}, \"buffers\": [] }\t";
  channel c = channel::hb;
  message m;
  ASSERT_FALSE(decode_legacy(text, false, c, m));
  EXPECT_EQ(c, channel::shell);
  EXPECT_EQ(m.header, header);
  EXPECT_EQ(m.content, content);
  EXPECT_EQ(m.metadata, metadata);
  EXPECT_EQ(m.parent_header, "{}");
  EXPECT_EQ(m.msg_id(), "m1");
}

TEST(websocket_legacy, missing_parent_and_metadata_are_empty_objects) {
  channel c = channel::hb;
  message m;
  ASSERT_FALSE(
      decode_legacy(R"({"header":{"msg_id":"a","msg_type":"kernel_info_request"},"channel":"control",)"
                    R"("content":{},"parent_header":null})",
                    false, c, m));
  EXPECT_EQ(c, channel::control);
  EXPECT_EQ(m.parent_header, "{}");
  EXPECT_EQ(m.metadata, "{}");
  EXPECT_EQ(m.session(), "");
}

std::string legacy_binary(std::vector<std::uint32_t> table, const std::string& tail) {
  std::string out;
  for (const auto v : table) {
    for (int shift = 24; shift >= 0; shift -= 8)
      out.push_back(static_cast<char>(v >> shift));
  }
  return out + tail;
}

TEST(websocket_legacy, malformed_inputs_each_have_their_error) {
  const std::string h = R"("header":{"msg_id":"m","msg_type":"t","session":"s"})";
  const std::string good = "{" + h + R"(,"channel":"shell","content":{}})";
  const std::string good_json_for_binary = good;
  struct row {
    const char* name;
    std::string data;
    bool binary;
    protocol_errc expected;
  };
  const std::vector<row> rows = {
      {"empty text", "", false, protocol_errc::bad_json},
      {"bad json", "{" + h + ",", false, protocol_errc::bad_json},
      {"trailing garbage", good + "x", false, protocol_errc::bad_json},
      {"invalid utf-8", "{" + h + ",\"channel\":\"shell\",\"content\":{\"t\":\"\xc3\"}}", false,
       protocol_errc::bad_json},
      {"nul then junk", good + std::string(1, '\0') + "junk", false, protocol_errc::bad_json},
      {"array", "[1]", false, protocol_errc::not_an_object},
      {"no channel", "{" + h + "}", false, protocol_errc::bad_channel},
      {"unknown channel", "{" + h + R"(,"channel":"shel"})", false, protocol_errc::bad_channel},
      {"channel not a string", "{" + h + R"(,"channel":1})", false, protocol_errc::bad_channel},
      {"no header", R"({"channel":"shell","content":{}})", false, protocol_errc::missing_field},
      {"header not object", R"({"channel":"shell","header":[]})", false, protocol_errc::not_an_object},
      {"header without msg_type", R"({"channel":"shell","header":{"msg_id":"m"}})", false,
       protocol_errc::missing_field},
      {"content not object", "{" + h + R"(,"channel":"shell","content":"x"})", false,
       protocol_errc::not_an_object},
      {"metadata not object", "{" + h + R"(,"channel":"shell","metadata":[]})", false,
       protocol_errc::not_an_object},
      {"parent not object", "{" + h + R"(,"channel":"shell","parent_header":1})", false,
       protocol_errc::not_an_object},
      {"binary too short", std::string("\0\0", 2), true, protocol_errc::truncated_frame},
      {"binary zero parts", legacy_binary({0}, ""), true, protocol_errc::bad_offsets},
      {"binary table truncated", legacy_binary({3, 16}, ""), true, protocol_errc::truncated_frame},
      {"binary huge count", legacy_binary({0xffffffffu}, ""), true, protocol_errc::truncated_frame},
      {"binary first offset wrong", legacy_binary({1, 4}, good_json_for_binary), true,
       protocol_errc::bad_offsets},
      {"binary offsets descending", legacy_binary({2, 12, 11}, good_json_for_binary), true,
       protocol_errc::bad_offsets},
      {"binary offset out of range", legacy_binary({2, 12, 100000}, good_json_for_binary), true,
       protocol_errc::offset_out_of_range},
      {"binary bad json", legacy_binary({1, 8}, "{"), true, protocol_errc::bad_json},
      {"nested too deep",
       "{" + h + R"(,"channel":"shell","content":{"a":)" + std::string(max_json_depth, '[') +
           std::string(max_json_depth, ']') + "}}",
       false, protocol_errc::bad_json},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    channel c = channel::hb;
    message m;
    m.content = "untouched";
    const auto ec = decode_legacy(r.data, r.binary, c, m);
    EXPECT_EQ(ec, r.expected) << ec.message();
    EXPECT_EQ(m.content, "untouched");
    EXPECT_EQ(c, channel::hb);
  }
  channel c = channel::hb;
  message m;
  EXPECT_FALSE(decode_legacy(legacy_binary({1, 8}, good), true, c, m));
  EXPECT_FALSE(decode_legacy(
      legacy_binary({2, 12, 12 + static_cast<std::uint32_t>(good.size())}, good + "BUF"), true, c, m));
  EXPECT_EQ(m.buffers, std::vector<std::string>{"BUF"});
}

}  // namespace
}  // namespace sandgate::protocol
