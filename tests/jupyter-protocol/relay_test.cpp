// The relay rule: metadata, content and buffers cross ZeroMQ -> WebSocket ->
// ZeroMQ as the exact bytes the kernel produced, in both WebSocket protocols.

#include <jupyter_protocol/websocket.hpp>

#include <jupyter_protocol/wire.hpp>

#include <gtest/gtest.h>

namespace sandgate::protocol {
namespace {

struct relay_case {
  const char* name;
  const char* msg_type;
  std::string metadata;
  std::string content;
  std::vector<std::string> buffers;
};

std::vector<relay_case> relay_cases() {
  std::string binary(256, '\0');
  for (int i = 0; i < 256; ++i)
    binary[static_cast<std::size_t>(i)] = static_cast<char>(i);
  return {
      {"png display_data",
       "display_data",
       "{\"image/png\": {\"width\": 640,\"height\":480}}",
       "{\"data\": {\"image/png\": "
       "\"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5"
       "ErkJggg==\", \"text/plain\": \"<Figure size 640x480 with 1 Axes>\"},\n \"metadata\" : {}, "
       "\"transient\":{}}",
       {}},
      {"html execute_result",
       "execute_result",
       "{}",
       "{\"execution_count\":3,\"data\":{\"text/html\":\"<table>\\n<tr><td>\\u00e9\xc3\xa9 \\\"q\\\" \\\\ "
       "\\/ \\ud83d\\ude00 \xf0\x9f\x98\x80</td></tr>\\n</table>\",\"text/plain\":\"  x\\t\"},  "
       "\"metadata\":{ }}",
       {}},
      {"odd whitespace and numbers",
       "stream",
       "{ \"a\" :\t[ 1 ,2.50 , -0.0, 1E+2 ] ,\r\n\"b\":null }",
       "{\n  \"name\"  :  \"stdout\",\n  \"text\"  :  \"line\\r\\nnext\\u0000end\"\n}",
       {}},
      {"comm with binary buffers",
       "comm_msg",
       "{}",
       "{\"comm_id\":\"c1\",\"data\":{\"buffer_paths\":[[\"a\"],[\"b\"],[\"c\"]]}}",
       {binary, "", std::string(1 << 16, '\xff')}},
  };
}

message kernel_message(const relay_case& rc) {
  message m = make_message(rc.msg_type, rc.content, "kernel-session", "kernel");
  const auto request = make_message("execute_request", "{\"code\":\"1\"}", "client-session", "user");
  m.parent_header = request.header;
  m.parent = request.head;
  m.metadata = rc.metadata;
  m.buffers = rc.buffers;
  return m;
}

void expect_same_bytes(const message& got, const message& sent) {
  EXPECT_EQ(got.header, sent.header);
  EXPECT_EQ(got.parent_header, sent.parent_header);
  EXPECT_EQ(got.metadata, sent.metadata);
  EXPECT_EQ(got.content, sent.content);
  EXPECT_EQ(got.buffers, sent.buffers);
  EXPECT_EQ(got.msg_id(), sent.msg_id());
  EXPECT_EQ(got.parent.msg_id, sent.parent.msg_id);
}

TEST(relay, zmq_to_websocket_to_zmq_keeps_bytes) {
  const signer kernel_key{"kernel-key"};
  const signer other_key{"another-kernel-key"};
  for (const auto& rc : relay_cases()) {
    for (const bool v1 : {false, true}) {
      SCOPED_TRACE(std::string(rc.name) + (v1 ? " / v1" : " / legacy"));
      const message sent = kernel_message(rc);
      message from_kernel;
      ASSERT_FALSE(decode(encode(sent, kernel_key), kernel_key, from_kernel));

      channel c = channel::hb;
      message from_ws;
      if (v1) {
        ASSERT_FALSE(decode_v1(encode_v1(channel::iopub, from_kernel), c, from_ws));
      } else {
        const auto frame = encode_legacy(channel::iopub, from_kernel);
        EXPECT_EQ(frame.binary, !sent.buffers.empty());
        if (!frame.binary) {
          EXPECT_NE(frame.data.find(sent.content), std::string::npos);
        }
        ASSERT_FALSE(decode_legacy(frame.data, frame.binary, c, from_ws));
      }
      EXPECT_EQ(c, channel::iopub);
      expect_same_bytes(from_ws, sent);

      // Re-signed for another kernel, the bytes still do not change.
      message again;
      ASSERT_FALSE(decode(encode(std::move(from_ws), other_key), other_key, again));
      expect_same_bytes(again, sent);
    }
  }
}

TEST(relay, client_request_bytes_reach_the_kernel_unchanged) {
  const std::string header =
      "{\"msg_id\":\"8d1e\",\"msg_type\":\"execute_request\",\"username\":\"\",\"session\":\"c\",\"date\":"
      "\"2026-"
      "11-29T10:00:00.000Z\",\"version\":\"5.2\"}";
  const std::string content = "{\"code\":\"print(\\\"\xc3\xa9\\\\n\\\")\\n\",\"silent\":false}";
  message m;
  m.header = header;
  m.content = content;
  m.metadata = "{\"cellId\":\"x\"}";
  ASSERT_FALSE(parse_header(m.header, m.head, true));
  for (const bool v1 : {false, true}) {
    SCOPED_TRACE(v1 ? "v1" : "legacy");
    channel c = channel::hb;
    message from_ws;
    if (v1) {
      ASSERT_FALSE(decode_v1(encode_v1(channel::shell, m), c, from_ws));
    } else {
      const auto frame = encode_legacy(channel::shell, m);
      ASSERT_FALSE(decode_legacy(frame.data, frame.binary, c, from_ws));
    }
    const signer key{"k"};
    const auto frames = encode(std::move(from_ws), key);
    ASSERT_EQ(frames.size(), 6u);
    EXPECT_EQ(frames[2], header);
    EXPECT_EQ(frames[5], content);
    EXPECT_EQ(frames[1], key.sign(header, "{}", "{\"cellId\":\"x\"}", content));
  }
}

}  // namespace
}  // namespace sandgate::protocol
