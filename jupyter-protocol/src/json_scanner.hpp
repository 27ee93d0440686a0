#pragma once
// A strict RFC 8259 JSON validator for the hot path (headers on every
// relayed message), an order of magnitude faster than nlohmann's lexer. It
// builds nothing: it validates the whole text (UTF-8, escapes, surrogate
// pairs, number grammar, nesting without recursion) and reports the
// top-level string members of a root object. The fuzz targets check that it
// agrees with nlohmann::json::accept.

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

namespace sandgate::protocol::detail {

enum class json_root { invalid, object, other };

// Receives each top-level member of a root object whose value is a string.
// `key` and `value` are the raw text between the quotes (still escaped when
// the matching flag is set).
class top_level_strings {
 public:
  virtual void on_string(std::string_view key, bool key_escaped, std::string_view value,
                         bool value_escaped) = 0;
  // A top-level member whose value is not a string (number, literal,
  // object or array), before that value is scanned.
  virtual void on_other(std::string_view /*key*/, bool /*key_escaped*/) {}
  // A top-level member whose value is a number, after on_other; `number`
  // is its text as validated.
  virtual void on_number(std::string_view /*key*/, bool /*key_escaped*/, std::string_view /*number*/) {}
  // Every top-level member once its value is scanned, whatever its type;
  // `value` is the value's whole text as validated (a string with its quotes).
  virtual void on_value(std::string_view /*key*/, bool /*key_escaped*/, std::string_view /*value*/) {}

 protected:
  ~top_level_strings() = default;
};

// Validates `text` as one JSON value (whitespace around it allowed); text
// whose arrays and objects nest deeper than `max_depth` is invalid.
[[nodiscard]] json_root scan_json(std::string_view text, top_level_strings* sink = nullptr,
                                  std::size_t max_depth = std::numeric_limits<std::size_t>::max());

// Decodes the raw inside of a string literal that scan_json validated.
void unescape_json_string(std::string_view raw, std::string& out);

}  // namespace sandgate::protocol::detail
