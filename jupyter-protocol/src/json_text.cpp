// JSON text helpers: quoting, object checks and value spans.

#include "json_text.hpp"

#include "json_scanner.hpp"

#include <jupyter_protocol/errors.hpp>
#include <jupyter_protocol/json_members.hpp>

#include <nlohmann/json.hpp>

namespace sandgate::protocol::detail {

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char hex_digits[] = "0123456789abcdef";
  out.push_back('"');
  for (const char ch : s) {
    const auto byte = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (byte < 0x20) {
          out += "\\u00";
          out.push_back(hex_digits[byte >> 4]);
          out.push_back(hex_digits[byte & 0xf]);
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
}

std::error_code check_json_object(std::string_view text) {
  switch (scan_json(text, nullptr, max_json_depth)) {
    case json_root::object:
      return {};
    case json_root::other:
      return protocol_errc::not_an_object;
    case json_root::invalid:
      break;
  }
  return protocol_errc::bad_json;
}

std::size_t skip_whitespace(std::string_view text, std::size_t pos) noexcept {
  while (pos < text.size() &&
         (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\n' || text[pos] == '\r')) {
    ++pos;
  }
  return pos;
}

std::size_t skip_value(std::string_view text, std::size_t pos) noexcept {
  std::size_t depth = 0;
  while (pos < text.size()) {
    const char ch = text[pos];
    if (ch == '"') {
      ++pos;
      while (pos < text.size() && text[pos] != '"')
        pos += text[pos] == '\\' ? 2 : 1;
      ++pos;  // closing quote
    } else if (ch == '{' || ch == '[') {
      ++depth;
      ++pos;
    } else if (ch == '}' || ch == ']') {
      if (depth == 0) return pos;  // end of the enclosing container
      --depth;
      ++pos;
    } else if (ch == ',' || ch == ':' || ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
      if (depth == 0) return pos;
      ++pos;
    } else {
      ++pos;  // literal or number character
    }
    if (depth == 0 && (ch == '"' || ch == '}' || ch == ']')) return pos;
  }
  return depth == 0 ? pos : text.size() + 1;
}

bool decode_json_string(std::string_view literal, std::string& out) {
  if (literal.size() < 2 || literal.front() != '"' || literal.back() != '"') return false;
  const std::string_view inner = literal.substr(1, literal.size() - 2);
  if (inner.find('\\') == std::string_view::npos) {
    out.assign(inner);
    return true;
  }
  const auto parsed = nlohmann::json::parse(literal, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_string()) return false;
  out = parsed.get_ref<const std::string&>();
  return true;
}

}  // namespace sandgate::protocol::detail
