// libFuzzer target: the v1.kernel.websocket.jupyter.org decoder.
// A decoded message must survive a v1, a legacy and a wire round trip.

#include <jupyter_protocol/websocket.hpp>
#include <jupyter_protocol/wire.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

using namespace sandgate::protocol;

namespace {

// Aborts (a finding) with the failed condition's text.
#define check(condition)                                          \
  do {                                                            \
    if (!(condition)) {                                           \
      std::fprintf(stderr, "invariant failed: %s\n", #condition); \
      std::abort();                                               \
    }                                                             \
  } while (false)

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view frame(reinterpret_cast<const char*>(data), size);
  channel c = channel::hb;
  message m;
  if (decode_v1(frame, c, m)) return 0;

  const std::string encoded = encode_v1(c, m);
  channel c2 = channel::hb;
  message again;
  check(!decode_v1(encoded, c2, again));
  check(c2 == c && again.header == m.header && again.parent_header == m.parent_header &&
        again.metadata == m.metadata && again.content == m.content && again.buffers == m.buffers);

  // The legacy text splices the parts; its decoder finds the same values
  // (less any whitespace around them).
  const auto legacy = encode_legacy(c, m);
  channel c3 = channel::hb;
  message from_legacy;
  check(!decode_legacy(legacy.data, legacy.binary, c3, from_legacy));
  check(c3 == c && from_legacy.header == trim(m.header) && from_legacy.content == trim(m.content) &&
        from_legacy.metadata == trim(m.metadata) && from_legacy.buffers == m.buffers &&
        from_legacy.head.msg_id == m.head.msg_id);

  const signer s{"fuzz-key"};
  message from_wire;
  check(!decode(encode(m, s), s, from_wire));
  check(from_wire.content == m.content && from_wire.head.msg_id == m.head.msg_id);
  return 0;
}
