#include <jupyter_protocol/wire.hpp>

#include <jupyter_protocol/errors.hpp>

#include "fixtures.hpp"

#include <gtest/gtest.h>

namespace sandgate::protocol {
namespace {

TEST(wire, decodes_jupyter_client_frames_and_encodes_them_back) {
  for (const auto& g : testing::golden_cases()) {
    SCOPED_TRACE(g.name);
    const signer s{g.key};
    auto frames = g.zmq_frames;
    message m;
    ASSERT_FALSE(decode(std::move(frames), s, m));
    EXPECT_EQ(m.identities.size(), g.identities);
    EXPECT_EQ(m.msg_id(), g.msg_id);
    EXPECT_EQ(m.msg_type(), g.msg_type);
    EXPECT_EQ(m.session(), g.session);
    EXPECT_EQ(m.head.username, g.username);
    EXPECT_EQ(m.head.date, g.date);
    EXPECT_EQ(m.head.version, "5.3");
    EXPECT_EQ(m.parent.msg_id, g.parent_msg_id);
    const std::size_t h = g.identities + 2;
    EXPECT_EQ(m.header, g.zmq_frames[h]);
    EXPECT_EQ(m.content, g.zmq_frames[h + 3]);
    EXPECT_EQ(m.buffers.size(), g.zmq_frames.size() - h - 4);
    EXPECT_EQ(encode(m, s), g.zmq_frames);             // copy
    EXPECT_EQ(encode(std::move(m), s), g.zmq_frames);  // move
  }
}

TEST(wire, frames_are_moved_not_copied) {
  const signer s{"k"};
  auto m = make_message("display_data", "{\"data\":{\"text/plain\":\"longer than the small-string buffer\"}}",
                        "s");
  m.buffers.push_back(std::string(1 << 20, 'x'));
  auto frames = encode(std::move(m), s);
  const char* content_bytes = frames[5].data();
  const char* buffer_bytes = frames[6].data();
  message out;
  ASSERT_FALSE(decode(std::move(frames), s, out));
  EXPECT_EQ(out.content.data(), content_bytes);
  EXPECT_EQ(out.buffers.at(0).data(), buffer_bytes);
}

TEST(wire, round_trip_with_identities_and_buffers) {
  const signer s{"secret"};
  auto m = make_message("comm_msg", R"({"comm_id":"c","data":{}})", "sess");
  m.identities = {std::string("\0\1\2", 3), "peer"};
  m.metadata = R"({"k":   [1, 2]})";
  m.buffers = {std::string("\0bin\xff", 5), ""};
  auto frames = encode(m, s);
  ASSERT_EQ(frames.size(), 2u + 1 + 5 + 2);
  EXPECT_EQ(frames[2], delimiter);
  message out;
  ASSERT_FALSE(decode(std::move(frames), s, out));
  EXPECT_EQ(out.identities, m.identities);
  EXPECT_EQ(out.header, m.header);
  EXPECT_EQ(out.metadata, m.metadata);
  EXPECT_EQ(out.content, m.content);
  EXPECT_EQ(out.buffers, m.buffers);
  EXPECT_EQ(out.head.msg_id, m.head.msg_id);
}

struct malformed_case {
  const char* name;
  std::vector<std::string> frames;
  protocol_errc expected;
  bool signed_ = true;
};

std::vector<std::string> signed_frames(const signer& s, std::string header, std::string parent = "{}",
                                       std::string metadata = "{}", std::string content = "{}") {
  auto sig = s.sign(header, parent, metadata, content);
  return {"id", std::string(delimiter), sig, header, parent, metadata, content};
}

TEST(wire, malformed_inputs_each_have_their_error) {
  const signer s{"key"};
  const std::string h = R"({"msg_id":"m","msg_type":"t","session":"s"})";
  auto good = signed_frames(s, h);
  const std::string sig = good[2];
  auto wrong_sig = good;
  wrong_sig[2][0] = wrong_sig[2][0] == 'a' ? 'b' : 'a';
  auto upper_bad = good;
  upper_bad[2][5] = 'z';
  auto tampered = good;
  tampered[6] = R"({"x":1})";

  const std::vector<malformed_case> cases = {
      {"no frames", {}, protocol_errc::missing_delimiter},
      {"no delimiter", {"id", sig, h, "{}", "{}", "{}"}, protocol_errc::missing_delimiter},
      {"delimiter lookalike", {"<IDS|MSG> ", sig, h, "{}", "{}", "{}"}, protocol_errc::missing_delimiter},
      {"delimiter only", {std::string(delimiter)}, protocol_errc::too_few_frames},
      {"no content", {std::string(delimiter), sig, h, "{}", "{}"}, protocol_errc::too_few_frames},
      {"empty signature",
       {std::string(delimiter), "", h, "{}", "{}", "{}"},
       protocol_errc::bad_signature_length},
      {"short signature",
       {std::string(delimiter), sig.substr(2), h, "{}", "{}", "{}"},
       protocol_errc::bad_signature_length},
      {"non-hex signature", upper_bad, protocol_errc::bad_signature_hex},
      {"wrong signature", wrong_sig, protocol_errc::signature_mismatch},
      {"tampered content", tampered, protocol_errc::signature_mismatch},
      {"header bad json", signed_frames(s, "{\"msg_id\":"), protocol_errc::bad_json},
      {"header not object", signed_frames(s, "[1,2]"), protocol_errc::not_an_object},
      {"header lacks msg_type", signed_frames(s, R"({"msg_id":"m"})"), protocol_errc::missing_field},
      {"parent bad json", signed_frames(s, h, "{"), protocol_errc::bad_json},
      {"parent not object", signed_frames(s, h, "null"), protocol_errc::not_an_object},
      {"unsigned with signature",
       {std::string(delimiter), sig, h, "{}", "{}", "{}"},
       protocol_errc::bad_signature_length,
       false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    message out;
    auto frames = c.frames;
    const auto ec = decode(std::move(frames), c.signed_ ? s : signer{}, out);
    EXPECT_EQ(ec, c.expected) << ec.message();
    EXPECT_EQ(&ec.category(), &protocol_category());
  }
}

TEST(wire, json_is_not_parsed_before_the_signature_check) {
  // A bad header with a bad signature reports the signature, not the JSON.
  const signer s{"key"};
  std::vector<std::string> frames = {
      std::string(delimiter), std::string(64, '0'), "{not json", "{}", "{}", "{}"};
  message out;
  EXPECT_EQ(decode(std::move(frames), s, out), protocol_errc::signature_mismatch);
}

TEST(wire, metadata_and_content_stay_raw) {
  const signer s;
  const std::string content = "{ \"text\" :\t\"\\u00e9\\n\" ,\n \"n\": 1.50 }";
  auto frames = signed_frames(s, R"({"msg_id":"m","msg_type":"t"})", "{}", " {} ", content);
  message out;
  ASSERT_FALSE(decode(std::move(frames), s, out));
  EXPECT_EQ(out.metadata, " {} ");
  EXPECT_EQ(out.content, content);
  EXPECT_EQ(out.session(), "");
}

TEST(wire, decode_head_checks_as_decode_does_and_keeps_only_what_routes) {
  for (const auto& g : testing::golden_cases()) {
    SCOPED_TRACE(g.name);
    const signer s{g.key};
    const std::vector<std::string_view> views(g.zmq_frames.begin(), g.zmq_frames.end());
    message head;
    ASSERT_FALSE(decode_head(views, s, head));
    auto frames = g.zmq_frames;
    message whole;
    ASSERT_FALSE(decode(std::move(frames), s, whole));
    EXPECT_EQ(head.identities, whole.identities);
    EXPECT_EQ(head.header, whole.header);
    EXPECT_EQ(head.parent_header, whole.parent_header);
    EXPECT_EQ(head.msg_id(), whole.msg_id());
    EXPECT_EQ(head.parent.msg_id, whole.parent.msg_id);
    EXPECT_TRUE(head.content.empty());
    EXPECT_TRUE(head.buffers.empty());
  }
}

TEST(wire, decode_head_refuses_what_decode_refuses) {
  const signer s{"secret"};
  auto frames = encode(make_message("stream", R"({"name":"stdout","text":"x"})", "sess"), s);
  std::vector<std::string> tampered = frames;
  tampered.back() = R"({"name":"stdout","text":"y"})";
  const std::vector<std::vector<std::string>> bad = {
      tampered, {frames.begin() + 1, frames.end()}, {frames.begin(), frames.end() - 1}};
  for (const auto& b : bad) {
    const std::vector<std::string_view> views(b.begin(), b.end());
    message head;
    auto copy = b;
    message whole;
    EXPECT_EQ(decode_head(views, s, head), decode(std::move(copy), s, whole));
    EXPECT_TRUE(decode_head(views, s, head));
  }
}

}  // namespace
}  // namespace sandgate::protocol
