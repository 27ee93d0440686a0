#include <jupyter_protocol/message.hpp>

#include <jupyter_protocol/errors.hpp>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <set>

namespace sandgate::protocol {
namespace {

// True when `text` matches `shape`, where in `shape` 'h' is a lowercase hex
// digit, 'd' a decimal digit and any other character stands for itself.
bool matches(std::string_view text, std::string_view shape) {
  if (text.size() != shape.size()) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool ok = shape[i] == 'h'   ? (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')
                    : shape[i] == 'd' ? c >= '0' && c <= '9'
                                      : c == shape[i];
    if (!ok) return false;
  }
  return true;
}

TEST(message, uuid4_shape_and_uniqueness) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const auto id = new_uuid4();
    EXPECT_TRUE(matches(id, "hhhhhhhh-hhhh-4hhh-hhhh-hhhhhhhhhhhh")) << id;
    EXPECT_NE(std::string_view("89ab").find(id[19]), std::string_view::npos) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(message, iso8601_has_zero_padded_microseconds) {
  for (int i = 0; i < 100; ++i) {
    const auto date = iso8601_now();
    EXPECT_TRUE(matches(date, "dddd-dd-ddTdd:dd:dd.ddddddZ")) << date;
  }
}

TEST(message, parse_iso8601_reads_what_kernels_write) {
  using namespace std::chrono;
  const auto at = [](long long unix_micros) { return system_clock::time_point(microseconds(unix_micros)); };
  // 2026-12-02T08:20:19Z is 1796199619 s after the epoch.
  EXPECT_EQ(parse_iso8601("2026-12-02T08:20:19.011563Z"), at(1796199619011563));
  EXPECT_EQ(parse_iso8601("2026-12-02T08:20:19Z"), at(1796199619000000));
  EXPECT_EQ(parse_iso8601("2026-12-02T08:20:19.5"), at(1796199619500000));  // no zone: UTC
  EXPECT_EQ(parse_iso8601("2026-12-02T08:20:19.0115639999Z"), at(1796199619011563));
  EXPECT_EQ(parse_iso8601("2026-12-02T10:20:19.011563+02:00"), at(1796199619011563));
  EXPECT_EQ(parse_iso8601("2026-12-02T03:50:19.011563-04:30"), at(1796199619011563));
  for (int i = 0; i < 100; ++i) {
    const auto now = time_point_cast<microseconds>(system_clock::now());
    EXPECT_EQ(parse_iso8601(iso8601(now)), now);
  }
  for (const char* bad :
       {"", "2026-12-02", "2026-12-02T08:20:19.Z", "2026-12-02T08:20:19Zjunk", "2026-12-02T08:20:19+2:00",
        "2026-12-02T08:20:19+02:60", "yesterday", "2026-13-02T08:20:19Z"})
    EXPECT_EQ(parse_iso8601(bad), std::nullopt) << bad;
}

TEST(message, make_message_header) {
  const auto m = make_message("kernel_info_request", "{}", "sess");
  const auto h = nlohmann::json::parse(m.header);
  EXPECT_EQ(h["msg_id"], m.msg_id());
  EXPECT_EQ(h["msg_type"], "kernel_info_request");
  EXPECT_EQ(h["session"], "sess");
  EXPECT_EQ(h["username"], "sandgate");
  EXPECT_EQ(h["version"], "5.3");
  EXPECT_EQ(h["date"], m.head.date);
  EXPECT_EQ(m.parent_header, "{}");
  EXPECT_EQ(m.metadata, "{}");
  EXPECT_EQ(m.content, "{}");
  header_fields parsed;
  ASSERT_FALSE(parse_header(m.header, parsed, true));
  EXPECT_EQ(parsed.msg_id, m.head.msg_id);
  EXPECT_EQ(parsed.date, m.head.date);
}

TEST(message, header_json_escapes) {
  header_fields h;
  h.msg_id = "a\"b\\c\n\x01";
  h.msg_type = "t";
  h.username = "\xc3\xa9";  // é stays UTF-8
  const auto text = header_json(h);
  EXPECT_NE(text.find("\xc3\xa9"), std::string::npos);
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["msg_id"], h.msg_id);
  EXPECT_EQ(j["username"], h.username);
}

TEST(message, make_reply_keeps_request_header_verbatim) {
  message request;
  request.identities = {"id-a", "id-b"};
  request.header =
      R"({ "msg_id" : "r1", "msg_type":"execute_request", "session":"s", "username":"u" , "x":[1,{}]})";
  ASSERT_FALSE(parse_header(request.header, request.head, true));
  const auto reply = make_reply(request, "execute_reply", R"({"status":"ok"})");
  EXPECT_EQ(reply.parent_header, request.header);
  EXPECT_EQ(reply.parent.msg_id, "r1");
  EXPECT_EQ(reply.session(), "s");
  EXPECT_EQ(reply.head.username, "u");
  EXPECT_EQ(reply.identities, request.identities);
  EXPECT_EQ(reply.content, R"({"status":"ok"})");
  EXPECT_NE(reply.msg_id(), "r1");
}

TEST(message, make_status) {
  const auto orphan = make_status("starting", "s", nullptr);
  EXPECT_EQ(orphan.msg_type(), "status");
  EXPECT_EQ(orphan.parent_header, "{}");
  EXPECT_EQ(nlohmann::json::parse(orphan.content)["execution_state"], "starting");
  const auto request = make_message("execute_request", "{}", "s");
  const auto busy = make_status("busy", "s", &request);
  EXPECT_EQ(busy.parent_header, request.header);
  EXPECT_EQ(busy.parent.msg_id, request.msg_id());
}

TEST(message, clone_is_deep) {
  auto m = make_message("x", "{}", "s");
  m.buffers = {"abc"};
  auto c = m.clone();
  c.buffers[0] = "xyz";
  EXPECT_EQ(m.buffers[0], "abc");
  EXPECT_EQ(c.header, m.header);
}

TEST(parse_header, fields_and_errors) {
  header_fields h;
  EXPECT_FALSE(parse_header("{}", h, false));
  EXPECT_EQ(h.msg_id, "");
  EXPECT_EQ(parse_header("{}", h, true), protocol_errc::missing_field);
  EXPECT_EQ(parse_header(R"({"msg_id":"a"})", h, true), protocol_errc::missing_field);
  EXPECT_EQ(parse_header(R"({"msg_id":1,"msg_type":"t"})", h, true), protocol_errc::missing_field);
  EXPECT_FALSE(parse_header(R"({"msg_id":"a","msg_type":"t"})", h, true));  // session may be absent
  EXPECT_FALSE(parse_header(R"({"msg_id":"a","msg_type":"t","session":""})", h, true));
  EXPECT_EQ(parse_header("[]", h, false), protocol_errc::not_an_object);
  EXPECT_EQ(parse_header("\"x\"", h, false), protocol_errc::not_an_object);
  EXPECT_EQ(parse_header("null", h, false), protocol_errc::not_an_object);
  EXPECT_EQ(parse_header("[1,", h, false), protocol_errc::bad_json);
  EXPECT_EQ(parse_header("", h, false), protocol_errc::bad_json);
  EXPECT_EQ(parse_header("{\"a\":1", h, false), protocol_errc::bad_json);
  EXPECT_EQ(parse_header("{} x", h, false), protocol_errc::bad_json);
  EXPECT_EQ(parse_header(std::string("{}\0x", 4), h, false), protocol_errc::bad_json);
  EXPECT_EQ(parse_header("{\"a\":\"\xff\"}", h, false), protocol_errc::bad_json);
  // Nested values with the same names do not count.
  ASSERT_FALSE(parse_header(
      R"({"x":{"msg_id":"inner","msg_type":"inner"},"msg_id":"outer","msg_type":"t","session":"s\u00e9","list":["msg_id"]})",
      h, true));
  EXPECT_EQ(h.msg_id, "outer");
  EXPECT_EQ(h.msg_type, "t");
  EXPECT_EQ(h.session, "s\xc3\xa9");
}

}  // namespace
}  // namespace sandgate::protocol
