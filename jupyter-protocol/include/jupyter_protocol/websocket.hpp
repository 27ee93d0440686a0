#pragma once
// The WebSocket codecs jupyter_server speaks to browsers:
//  - legacy JSON: a text frame holding the message as one JSON object with a
//    "channel" key; a message with buffers goes as a binary frame
//    (jupyter_server's serialize_binary_message: u32 big-endian count and
//    offsets, then the JSON, then the buffers);
//  - v1.kernel.websocket.jupyter.org: a binary frame, u64 little-endian
//    offset count and offsets, then channel, header, parent_header,
//    metadata, content and buffers.
// Conversion splices the raw JSON texts; bodies are never re-serialised.

#include <jupyter_protocol/message.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace sandgate::protocol {

inline constexpr std::string_view v1_subprotocol = "v1.kernel.websocket.jupyter.org";

// stdin_: stdin is a macro. NOLINTNEXTLINE(readability-identifier-naming)
enum class channel { shell, iopub, stdin_, control, hb };

[[nodiscard]] std::string_view to_string(channel c) noexcept;
[[nodiscard]] std::optional<channel> parse_channel(std::string_view name) noexcept;

struct ws_frame {
  std::string data;
  bool binary = false;
};

// Legacy JSON protocol.
[[nodiscard]] ws_frame encode_legacy(channel c, const message& m);
[[nodiscard]] std::error_code decode_legacy(std::string_view data, bool binary, channel& c, message& out);

// v1.kernel.websocket.jupyter.org.
[[nodiscard]] std::string encode_v1(channel c, const message& m);
// The frame of encode_v1 up to the content: the offsets, channel, header,
// parent_header and metadata. m.content and then m.buffers follow it
// unchanged, so a writer can send them from where they are.
[[nodiscard]] std::string encode_v1_head(channel c, const message& m);
[[nodiscard]] std::error_code decode_v1(std::string_view data, channel& c, message& out);

}  // namespace sandgate::protocol
