#pragma once
// Several top-level members of a JSON object text read in one validating
// pass, without building a document: for the few fields the gateway needs
// from a message's content.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace sandgate::protocol {

// How deep the JSON the gateway reads from kernels, clients and peers may
// nest. Any real message is far shallower (Python's json module stops near
// 1000 levels); copying or writing out a document recurses once per level,
// so a deeper one could end the process on a thread's stack.
inline constexpr std::size_t max_json_depth = 1000;

// Whether `text` is one valid JSON value (whitespace around it allowed)
// whose arrays and objects nest at most `max_depth` deep.
[[nodiscard]] bool valid_json(std::string_view text, std::size_t max_depth = max_json_depth);

// A top-level member for read_members to fill: its value when a string
// (unescaped) or an integer that fits in 64 bits, else neither; and its
// value's JSON text whatever its type (a view into the text read).
struct json_member {
  json_member(std::string_view k) : key(k) {}  // NOLINT: {"key"} in a list reads best

  std::string_view key;
  std::optional<std::string> string;
  std::optional<std::int64_t> integer;
  std::optional<std::string_view> raw;
};

// string_member for several keys, integers too, in one validating pass;
// what `members` held before is cleared. false, with every member left
// unset, when the text is not a valid JSON object nested at most
// max_json_depth deep.
[[nodiscard]] bool read_members(std::string_view json, std::span<json_member> members);

}  // namespace sandgate::protocol
