// The legacy JSON WebSocket protocol (jupyter_server's default): a text frame
// with the whole message as one JSON object, or, when the message carries
// buffers, serialize_binary_message's layout: u32 big-endian part count, u32
// big-endian offsets, the JSON (without "buffers"), then the buffers.

#include <jupyter_protocol/errors.hpp>
#include <jupyter_protocol/json_members.hpp>
#include <jupyter_protocol/websocket.hpp>

#include "json_scanner.hpp"
#include "json_text.hpp"
#include "message_parts.hpp"

#include <cstdint>
#include <vector>

namespace sandgate::protocol {
namespace {

// Appends the outer object, splicing the raw JSON parts (separators as
// Python's json.dumps writes them, so the bytes match jupyter_server's).
void append_legacy_json(std::string& out, channel c, const message& m, bool with_empty_buffers) {
  out += "{\"header\": ";
  out += m.header;
  out += ", \"msg_id\": ";
  detail::append_json_string(out, m.head.msg_id);
  out += ", \"msg_type\": ";
  detail::append_json_string(out, m.head.msg_type);
  out += ", \"parent_header\": ";
  out += m.parent_header;
  out += ", \"metadata\": ";
  out += m.metadata;
  out += ", \"content\": ";
  out += m.content;
  if (with_empty_buffers) out += ", \"buffers\": []";
  out += ", \"channel\": ";
  detail::append_json_string(out, to_string(c));
  out += '}';
}

void append_u32_be(std::string& out, std::uint32_t value) {
  out.push_back(static_cast<char>(value >> 24));
  out.push_back(static_cast<char>(value >> 16));
  out.push_back(static_cast<char>(value >> 8));
  out.push_back(static_cast<char>(value));
}

std::uint32_t read_u32_be(std::string_view data, std::size_t pos) noexcept {
  const auto byte = [&](std::size_t i) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(data[pos + i]));
  };
  return (byte(0) << 24) | (byte(1) << 16) | (byte(2) << 8) | byte(3);
}

std::string_view null_as_absent(std::string_view value) {
  return value == "null" ? std::string_view{} : value;
}

// Decodes the JSON object of a legacy message (text frame, or the first part
// of a binary one). Only the member spans are copied; nothing is re-serialised.
std::error_code decode_legacy_json(std::string_view text, channel& c, message& out) {
  if (detail::contains_nul(text) ||
      detail::scan_json(text, nullptr, max_json_depth) == detail::json_root::invalid)
    return protocol_errc::bad_json;
  detail::message_parts parts;
  std::string_view channel_literal;
  bool has_header = false;
  const bool shaped = detail::for_each_member(text, [&](std::string_view key, std::string_view value) {
    if (key == "header") {
      parts.header = value;
      has_header = true;
    } else if (key == "parent_header") {
      parts.parent_header = null_as_absent(value);
    } else if (key == "metadata") {
      parts.metadata = null_as_absent(value);
    } else if (key == "content") {
      parts.content = null_as_absent(value);
    } else if (key == "channel") {
      channel_literal = value;
    }
  });
  if (!shaped) return protocol_errc::not_an_object;
  std::string channel_name;
  if (channel_literal.empty() || !detail::decode_json_string(channel_literal, channel_name)) {
    return protocol_errc::bad_channel;
  }
  const auto parsed_channel = parse_channel(channel_name);
  if (!parsed_channel) return protocol_errc::bad_channel;
  if (!has_header) return protocol_errc::missing_field;
  if (auto ec = detail::fill_message(parts, /*already_valid_json=*/true, out)) return ec;
  c = *parsed_channel;
  return {};
}

std::error_code decode_legacy_binary(std::string_view data, channel& c, message& out) {
  if (data.size() < 4) return protocol_errc::truncated_frame;
  const std::uint64_t count = read_u32_be(data, 0);
  if (count == 0) return protocol_errc::bad_offsets;
  const std::uint64_t table_bytes = 4 * (count + 1);
  if (data.size() < table_bytes) return protocol_errc::truncated_frame;
  std::vector<std::size_t> offsets(count);
  for (std::size_t i = 0; i < count; ++i) {
    offsets[i] = read_u32_be(data, 4 * (i + 1));
    if (i == 0 ? offsets[i] != table_bytes : offsets[i] < offsets[i - 1]) return protocol_errc::bad_offsets;
    if (offsets[i] > data.size()) return protocol_errc::offset_out_of_range;
  }
  const auto part = [&](std::size_t i) {
    const std::size_t end = i + 1 < count ? offsets[i + 1] : data.size();
    return data.substr(offsets[i], end - offsets[i]);
  };
  message decoded;
  if (auto ec = decode_legacy_json(part(0), c, decoded)) return ec;
  decoded.buffers.reserve(count - 1);
  for (std::size_t i = 1; i < count; ++i)
    decoded.buffers.emplace_back(part(i));
  out = std::move(decoded);
  return {};
}

}  // namespace

ws_frame encode_legacy(channel c, const message& m) {
  ws_frame frame;
  if (m.buffers.empty()) {
    frame.data.reserve(m.header.size() + m.parent_header.size() + m.metadata.size() + m.content.size() + 256);
    append_legacy_json(frame.data, c, m, /*with_empty_buffers=*/true);
    return frame;
  }
  std::string json;
  json.reserve(m.header.size() + m.parent_header.size() + m.metadata.size() + m.content.size() + 256);
  append_legacy_json(json, c, m, /*with_empty_buffers=*/false);
  const std::size_t count = 1 + m.buffers.size();
  std::size_t total = 4 * (count + 1) + json.size();
  for (const auto& b : m.buffers)
    total += b.size();
  frame.binary = true;
  frame.data.reserve(total);
  append_u32_be(frame.data, static_cast<std::uint32_t>(count));
  std::size_t offset = 4 * (count + 1);
  append_u32_be(frame.data, static_cast<std::uint32_t>(offset));
  offset += json.size();
  for (std::size_t i = 0; i + 1 < m.buffers.size(); ++i) {
    append_u32_be(frame.data, static_cast<std::uint32_t>(offset));
    offset += m.buffers[i].size();
  }
  append_u32_be(frame.data, static_cast<std::uint32_t>(offset));
  frame.data += json;
  for (const auto& b : m.buffers)
    frame.data += b;
  return frame;
}

std::error_code decode_legacy(std::string_view data, bool binary, channel& c, message& out) {
  if (binary) return decode_legacy_binary(data, c, out);
  message decoded;
  if (auto ec = decode_legacy_json(data, c, decoded)) return ec;
  out = std::move(decoded);
  return {};
}

}  // namespace sandgate::protocol
