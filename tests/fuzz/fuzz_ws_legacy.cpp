// libFuzzer target: the legacy JSON WebSocket decoder.
// Input: one flag byte (bit 0: binary frame), then the frame.
// A decoded message must survive a legacy and a v1 round trip unchanged.
// Also a differential test: the hot-path JSON scanner must agree with
// nlohmann::json::accept on every input.

#include <jupyter_protocol/websocket.hpp>
#include <jupyter_protocol/wire.hpp>

#include "json_scanner.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
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

void check_same(const message& a, const message& b) {
  check(a.header == b.header && a.parent_header == b.parent_header && a.metadata == b.metadata &&
        a.content == b.content && a.buffers == b.buffers && a.head.msg_id == b.head.msg_id &&
        a.head.msg_type == b.head.msg_type && a.parent.msg_id == b.parent.msg_id);
}

// Every top-level member's value text, the last of repeated keys.
class member_values final : public detail::top_level_strings {
 public:
  void on_string(std::string_view, bool, std::string_view, bool) override {}
  void on_value(std::string_view key, bool key_escaped, std::string_view value) override {
    std::string k(key);
    if (key_escaped) detail::unescape_json_string(key, k);
    values[k] = value;
  }
  std::map<std::string, std::string_view> values;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool binary = (data[0] & 1) != 0;
  const std::string_view frame(reinterpret_cast<const char*>(data + 1), size - 1);

  if (frame.find('\0') == std::string_view::npos) {  // nlohmann stops at NUL
    const auto root = detail::scan_json(frame);
    check((root != detail::json_root::invalid) == nlohmann::json::accept(frame));
    if (root != detail::json_root::invalid) {
      const auto doc = nlohmann::json::parse(frame);
      check((root == detail::json_root::object) == doc.is_object());
      if (doc.is_object()) {  // each member's value text is that member
        member_values members;
        check(detail::scan_json(frame, &members) == detail::json_root::object);
        check(members.values.size() == doc.size());
        for (const auto& [key, value] : members.values)
          check(doc.contains(key) && nlohmann::json::parse(value) == doc[key]);
      }
    }
  }

  channel c = channel::hb;
  message m;
  if (decode_legacy(frame, binary, c, m)) return 0;

  const auto encoded = encode_legacy(c, m);
  channel c2 = channel::hb;
  message again;
  check(!decode_legacy(encoded.data, encoded.binary, c2, again));
  check(c2 == c);
  check_same(again, m);

  channel c3 = channel::hb;
  message from_v1;
  check(!decode_v1(encode_v1(c, m), c3, from_v1));
  check(c3 == c);
  check_same(from_v1, m);

  const signer s{"fuzz-key"};
  message from_wire;
  check(!decode(encode(m, s), s, from_wire));
  check_same(from_wire, m);
  return 0;
}
