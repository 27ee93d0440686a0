// v1.kernel.websocket.jupyter.org: u64 little-endian offset count, then that
// many u64 little-endian offsets, then channel, header, parent_header,
// metadata, content and buffers back to back. The first offset is
// 8 * (1 + count) and the last one is the frame's length.

#include <jupyter_protocol/errors.hpp>
#include <jupyter_protocol/websocket.hpp>

#include "message_parts.hpp"

#include <cstdint>
#include <vector>

namespace sandgate::protocol {
namespace {

// channel, header, parent_header, metadata, content: 5 parts, 6 offsets.
constexpr std::uint64_t min_offsets = 6;

void append_u64_le(std::string& out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>(value >> (8 * i)));
}

std::uint64_t read_u64_le(std::string_view data, std::size_t pos) noexcept {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i)
    value = (value << 8) | static_cast<unsigned char>(data[pos + static_cast<std::size_t>(i)]);
  return value;
}

}  // namespace

std::string encode_v1_head(channel c, const message& m) {
  const std::string_view name = to_string(c);
  const std::string_view head_parts[] = {name, m.header, m.parent_header, m.metadata};
  const std::size_t count = std::size(head_parts) + 1 + m.buffers.size() + 1;
  std::size_t head_size = 8 * (1 + count);
  for (const auto part : head_parts)
    head_size += part.size();

  std::string out;
  out.reserve(head_size);
  append_u64_le(out, count);
  std::uint64_t offset = 8 * (1 + count);
  append_u64_le(out, offset);
  for (const auto part : head_parts) {
    offset += part.size();
    append_u64_le(out, offset);
  }
  offset += m.content.size();
  append_u64_le(out, offset);
  for (const auto& b : m.buffers) {
    offset += b.size();
    append_u64_le(out, offset);
  }
  for (const auto part : head_parts)
    out += part;
  return out;
}

std::string encode_v1(channel c, const message& m) {
  std::string out = encode_v1_head(c, m);
  std::size_t total = out.size() + m.content.size();
  for (const auto& b : m.buffers)
    total += b.size();
  out.reserve(total);
  out += m.content;
  for (const auto& b : m.buffers)
    out += b;
  return out;
}

std::error_code decode_v1(std::string_view data, channel& c, message& out) {
  if (data.size() < 8) return protocol_errc::truncated_frame;
  const std::uint64_t count = read_u64_le(data, 0);
  if (count < min_offsets) return protocol_errc::bad_offsets;
  if (count > data.size() / 8 - 1) return protocol_errc::truncated_frame;
  std::vector<std::size_t> offsets(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t offset = read_u64_le(data, 8 * (i + 1));
    if (i == 0 ? offset != 8 * (1 + count) : offset < offsets[i - 1]) return protocol_errc::bad_offsets;
    if (offset > data.size()) return protocol_errc::offset_out_of_range;
    offsets[i] = offset;
  }
  if (offsets.back() != data.size()) return protocol_errc::bad_offsets;
  const auto part = [&](std::size_t i) { return data.substr(offsets[i], offsets[i + 1] - offsets[i]); };

  const auto parsed_channel = parse_channel(part(0));
  if (!parsed_channel) return protocol_errc::bad_channel;
  message decoded;
  const detail::message_parts parts{part(1), part(2), part(3), part(4)};
  if (auto ec = detail::fill_message(parts, /*already_valid_json=*/false, decoded)) return ec;
  decoded.buffers.reserve(count - min_offsets);
  for (std::size_t i = 5; i + 1 < count; ++i)
    decoded.buffers.emplace_back(part(i));
  out = std::move(decoded);
  c = *parsed_channel;
  return {};
}

}  // namespace sandgate::protocol
