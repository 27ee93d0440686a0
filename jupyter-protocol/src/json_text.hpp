#pragma once
// Small helpers over JSON text that never re-serialise a value: quoting a
// string, checking that a text is a JSON object, and finding the exact byte
// span of each top-level member's value in an already validated object.

#include <string>
#include <string_view>
#include <system_error>

namespace sandgate::protocol::detail {

// Appends `s` as a JSON string literal (quotes, escapes for '"', '\\' and
// control characters; other bytes, including UTF-8, are copied as they are).
void append_json_string(std::string& out, std::string_view s);

// nlohmann's lexer takes a NUL byte for the end of input, so "{}\0junk"
// would pass as valid; a raw NUL is never valid JSON, so callers reject it
// before handing text to nlohmann.
[[nodiscard]] inline bool contains_nul(std::string_view text) noexcept {
  return text.find('\0') != std::string_view::npos;
}

// Ok when `text` is valid JSON whose value is an object nested at most
// max_json_depth deep; bad_json or not_an_object otherwise (json_scanner:
// strict, no document built).
[[nodiscard]] std::error_code check_json_object(std::string_view text);

// Calls `on_member(key, value_text)` for each top-level member of `object`,
// where `value_text` is the exact substring of the member's value. `object`
// must already be validated as a JSON object; `key` is the decoded key.
// Returns false if the text does not have the expected shape.
template <typename OnMember>
bool for_each_member(std::string_view object, OnMember&& on_member);

// Index just past the JSON value starting at `pos` in validated text.
[[nodiscard]] std::size_t skip_value(std::string_view text, std::size_t pos) noexcept;
[[nodiscard]] std::size_t skip_whitespace(std::string_view text, std::size_t pos) noexcept;
// Decodes a JSON string literal (with quotes) from validated text.
[[nodiscard]] bool decode_json_string(std::string_view literal, std::string& out);

template <typename OnMember>
bool for_each_member(std::string_view object, OnMember&& on_member) {
  std::size_t pos = skip_whitespace(object, 0);
  if (pos >= object.size() || object[pos] != '{') return false;
  pos = skip_whitespace(object, pos + 1);
  if (pos < object.size() && object[pos] == '}') return true;
  std::string key;
  while (pos < object.size()) {
    const std::size_t key_end = skip_value(object, pos);
    if (key_end > object.size() || !decode_json_string(object.substr(pos, key_end - pos), key)) return false;
    pos = skip_whitespace(object, key_end);
    if (pos >= object.size() || object[pos] != ':') return false;
    const std::size_t value_begin = skip_whitespace(object, pos + 1);
    const std::size_t value_end = skip_value(object, value_begin);
    if (value_end > object.size()) return false;
    on_member(std::string_view{key}, object.substr(value_begin, value_end - value_begin));
    pos = skip_whitespace(object, value_end);
    if (pos >= object.size()) return false;
    if (object[pos] == '}') return true;
    if (object[pos] != ',') return false;
    pos = skip_whitespace(object, pos + 1);
  }
  return false;
}

}  // namespace sandgate::protocol::detail
