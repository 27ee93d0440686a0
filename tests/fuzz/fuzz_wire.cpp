// libFuzzer target: the ZeroMQ wire decoder.
// Input: one flag byte (bit 0: signed with the key "fuzz-key"), then frames,
// each a 2-byte little-endian length and that many bytes.
// A decoded message must encode and decode again to the same message, and
// survive both WebSocket encoders.

#include <jupyter_protocol/websocket.hpp>
#include <jupyter_protocol/wire.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace sandgate::protocol;

namespace {

std::vector<std::string> split_frames(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> frames;
  std::size_t pos = 0;
  while (pos + 2 <= size) {
    const std::size_t length = data[pos] | (static_cast<std::size_t>(data[pos + 1]) << 8);
    pos += 2;
    const std::size_t take = length < size - pos ? length : size - pos;
    frames.emplace_back(reinterpret_cast<const char*>(data + pos), take);
    pos += take;
  }
  return frames;
}

// Aborts (a finding) with the failed condition's text.
#define check(condition)                                          \
  do {                                                            \
    if (!(condition)) {                                           \
      std::fprintf(stderr, "invariant failed: %s\n", #condition); \
      std::abort();                                               \
    }                                                             \
  } while (false)

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const signer keyed{"fuzz-key"};
  static const signer unsigned_signer;
  const signer& s = (data[0] & 1) != 0 ? keyed : unsigned_signer;

  message m;
  if (decode(split_frames(data + 1, size - 1), s, m)) return 0;

  message again;
  check(!decode(encode(m, s), s, again));
  check(again.identities == m.identities && again.header == m.header &&
        again.parent_header == m.parent_header && again.metadata == m.metadata &&
        again.content == m.content && again.buffers == m.buffers && again.head.msg_id == m.head.msg_id &&
        again.parent.msg_id == m.parent.msg_id);

  (void)encode_legacy(channel::iopub, m);
  channel c = channel::hb;
  message from_v1;
  if (!decode_v1(encode_v1(channel::shell, m), c, from_v1)) {
    // v1 reads an empty part as "{}".
    check(c == channel::shell && from_v1.content == (m.content.empty() ? "{}" : m.content) &&
          from_v1.buffers == m.buffers);
  }
  return 0;
}
