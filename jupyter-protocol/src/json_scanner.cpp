// The strict, non-recursive JSON validator behind parse_header.

#include "json_scanner.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace sandgate::protocol::detail {
namespace {

class scanner {
 public:
  scanner(std::string_view text, top_level_strings* sink, std::size_t max_depth) noexcept
      : p_(text.data()), end_(text.data() + text.size()), sink_(sink), max_depth_(max_depth) {}

  json_root run() {
    skip_ws();
    if (p_ == end_) return json_root::invalid;
    const bool object = *p_ == '{';
    if (!value_sequence()) return json_root::invalid;
    skip_ws();
    if (p_ != end_) return json_root::invalid;
    return object ? json_root::object : json_root::other;
  }

 private:
  // Parses one complete value, containers included, with an explicit stack.
  bool value_sequence() {
    std::string stack;  // '{' or '[' per open container
    std::string_view key;
    bool key_escaped = false;
    // The top-level member whose value is being scanned, for on_value.
    const char* member_value = nullptr;
    std::string_view member_key_text;
    bool member_key_escaped = false;
    for (;;) {
      // Expect a value at p_.
      skip_ws();
      if (p_ == end_) return false;
      const char c = *p_;
      if (sink_ != nullptr && stack.size() == 1 && stack[0] == '{') {
        member_value = p_;
        member_key_text = key;
        member_key_escaped = key_escaped;
        if (c != '"') sink_->on_other(key, key_escaped);
      }
      if (c == '{' || c == '[') {
        if (stack.size() == max_depth_) return false;
        ++p_;
        stack.push_back(c);
        skip_ws();
        if (p_ == end_) return false;
        if (*p_ == (c == '{' ? '}' : ']')) {
          ++p_;
          stack.pop_back();
        } else if (c == '{') {
          if (!member_key(key, key_escaped)) return false;
          continue;
        } else {
          continue;
        }
      } else if (c == '"') {
        ++p_;
        const char* begin = p_;
        bool escaped = false;
        if (!string_body(escaped)) return false;
        if (sink_ != nullptr && stack.size() == 1 && stack[0] == '{') {
          sink_->on_string(key, key_escaped,
                           std::string_view(begin, static_cast<std::size_t>(p_ - 1 - begin)), escaped);
        }
      } else if (c == '-' || (c >= '0' && c <= '9')) {
        const char* begin = p_;
        if (!number()) return false;
        if (sink_ != nullptr && stack.size() == 1 && stack[0] == '{')
          sink_->on_number(key, key_escaped, std::string_view(begin, static_cast<std::size_t>(p_ - begin)));
      } else if (c == 't') {
        if (!literal("true")) return false;
      } else if (c == 'f') {
        if (!literal("false")) return false;
      } else if (c == 'n') {
        if (!literal("null")) return false;
      } else {
        return false;
      }
      // After a value: close containers or move to the next element.
      for (;;) {
        if (stack.empty()) return true;
        if (member_value != nullptr && stack.size() == 1) {
          sink_->on_value(member_key_text, member_key_escaped,
                          std::string_view(member_value, static_cast<std::size_t>(p_ - member_value)));
          member_value = nullptr;
        }
        skip_ws();
        if (p_ == end_) return false;
        const char close = stack.back() == '{' ? '}' : ']';
        if (*p_ == close) {
          ++p_;
          stack.pop_back();
          continue;
        }
        if (*p_ != ',') return false;
        ++p_;
        if (stack.back() == '{') {
          skip_ws();
          if (!member_key(key, key_escaped)) return false;
        }
        break;
      }
    }
  }

  // At a member's key: reads "key" then ':'.
  bool member_key(std::string_view& key, bool& escaped) {
    if (p_ == end_ || *p_ != '"') return false;
    ++p_;
    const char* begin = p_;
    escaped = false;
    if (!string_body(escaped)) return false;
    key = std::string_view(begin, static_cast<std::size_t>(p_ - 1 - begin));
    skip_ws();
    if (p_ == end_ || *p_ != ':') return false;
    ++p_;
    return true;
  }

  void skip_ws() noexcept {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t'))
      ++p_;
  }

  bool literal(std::string_view word) noexcept {
    if (static_cast<std::size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word)
      return false;
    p_ += word.size();
    return true;
  }

  bool digits() noexcept {
    const char* start = p_;
    while (p_ != end_ && *p_ >= '0' && *p_ <= '9')
      ++p_;
    return p_ != start;
  }

  // The grammar, then, for the rare number that could overflow a double (an
  // exponent or over 300 characters), nlohmann's verdict: it rejects
  // numbers that overflow to infinity, and the two validators must agree.
  bool number() {
    const char* start = p_;
    if (!number_grammar()) return false;
    const std::string_view token(start, static_cast<std::size_t>(p_ - start));
    if (token.size() <= 300 && token.find_first_of("eE") == std::string_view::npos) return true;
    return nlohmann::json::accept(token);
  }

  bool number_grammar() noexcept {
    if (*p_ == '-') ++p_;
    if (p_ == end_) return false;
    if (*p_ == '0') {
      ++p_;
    } else if (!digits()) {
      return false;
    }
    if (p_ != end_ && *p_ == '.') {
      ++p_;
      if (!digits()) return false;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!digits()) return false;
    }
    return true;
  }

  // True when none of the 8 bytes at `p` is a control character, '"', '\\'
  // or a non-ASCII byte (exact "any byte" tests from Bit Twiddling Hacks).
  static bool plain_ascii8(const char* p) noexcept {
    constexpr std::uint64_t ones = 0x0101010101010101ULL;
    constexpr std::uint64_t highs = 0x8080808080808080ULL;
    std::uint64_t w = 0;
    std::memcpy(&w, p, sizeof w);
    const auto has_zero = [](std::uint64_t v) { return (v - ones) & ~v & highs; };
    const std::uint64_t below_space = (w - ones * 0x20) & ~w & highs;
    return ((w & highs) | below_space | has_zero(w ^ (ones * '"')) | has_zero(w ^ (ones * '\\'))) == 0;
  }

  static int hex(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  bool hex4(std::uint32_t& out) noexcept {
    if (end_ - p_ < 4) return false;
    out = 0;
    for (int i = 0; i < 4; ++i) {
      const int h = hex(p_[i]);
      if (h < 0) return false;
      out = (out << 4) | static_cast<std::uint32_t>(h);
    }
    p_ += 4;
    return true;
  }

#if defined(__SSE2__)
  // How many of the 16 bytes at `p` come before the first control
  // character, '"', '\\' or non-ASCII byte (16: none is). Compared as signed
  // bytes, those from 0x80 up are negative: one test finds them and the
  // controls.
  static unsigned plain_ascii_prefix16(const char* p) noexcept {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i special = _mm_or_si128(
        _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
    const auto mask = static_cast<unsigned>(_mm_movemask_epi8(special));
    return mask == 0 ? 16u : static_cast<unsigned>(__builtin_ctz(mask));
  }
#endif

  // Skips plain ASCII: sixteen bytes at a time where SSE2 is there, else
  // eight; the byte loop of string_body does the rest.
  void skip_plain_ascii() noexcept {
#if defined(__SSE2__)
    while (end_ - p_ >= 16) {
      const unsigned n = plain_ascii_prefix16(p_);
      p_ += n;
      if (n < 16) return;
    }
#endif
    while (end_ - p_ >= 8 && plain_ascii8(p_))
      p_ += 8;
  }

  // After the opening quote; leaves p_ after the closing quote.
  bool string_body(bool& escaped) noexcept {
    for (;;) {
      skip_plain_ascii();
      while (p_ != end_) {
        const auto b = static_cast<unsigned char>(*p_);
        if (b < 0x20 || b == '"' || b == '\\' || b >= 0x80) break;
        ++p_;
      }
      if (p_ == end_) return false;
      const auto b = static_cast<unsigned char>(*p_);
      if (b == '"') {
        ++p_;
        return true;
      }
      if (b < 0x20) return false;
      if (b == '\\') {
        escaped = true;
        if (!escape()) return false;
        continue;
      }
      if (!utf8_sequence()) return false;
    }
  }

  bool escape() noexcept {
    ++p_;  // backslash
    if (p_ == end_) return false;
    const char c = *p_++;
    switch (c) {
      case '"':
      case '\\':
      case '/':
      case 'b':
      case 'f':
      case 'n':
      case 'r':
      case 't':
        return true;
      case 'u': {
        std::uint32_t unit = 0;
        if (!hex4(unit)) return false;
        if (unit >= 0xDC00 && unit <= 0xDFFF) return false;  // lone low surrogate
        if (unit >= 0xD800 && unit <= 0xDBFF) {
          if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
          p_ += 2;
          std::uint32_t low = 0;
          if (!hex4(low) || low < 0xDC00 || low > 0xDFFF) return false;
        }
        return true;
      }
      default:
        return false;
    }
  }

  // A well-formed UTF-8 sequence of 2-4 bytes (RFC 3629, table 3-7 of Unicode).
  bool utf8_sequence() noexcept {
    const auto* s = reinterpret_cast<const unsigned char*>(p_);
    const std::size_t left = static_cast<std::size_t>(end_ - p_);
    const auto in = [&](std::size_t i, unsigned char lo, unsigned char hi) {
      return i < left && s[i] >= lo && s[i] <= hi;
    };
    const unsigned char b = s[0];
    std::size_t n = 0;
    if (b >= 0xC2 && b <= 0xDF) {
      n = in(1, 0x80, 0xBF) ? 2 : 0;
    } else if (b == 0xE0) {
      n = in(1, 0xA0, 0xBF) && in(2, 0x80, 0xBF) ? 3 : 0;
    } else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) {
      n = in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) ? 3 : 0;
    } else if (b == 0xED) {
      n = in(1, 0x80, 0x9F) && in(2, 0x80, 0xBF) ? 3 : 0;
    } else if (b == 0xF0) {
      n = in(1, 0x90, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
    } else if (b >= 0xF1 && b <= 0xF3) {
      n = in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
    } else if (b == 0xF4) {
      n = in(1, 0x80, 0x8F) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
    }
    if (n == 0) return false;
    p_ += n;
    return true;
  }

  const char* p_;
  const char* end_;
  top_level_strings* sink_;
  std::size_t max_depth_;  // open arrays and objects at most
};

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::uint32_t read_hex4(std::string_view s, std::size_t i) {
  std::uint32_t v = 0;
  for (std::size_t k = 0; k < 4; ++k) {
    const char c = s[i + k];
    const std::uint32_t d = c <= '9'   ? static_cast<std::uint32_t>(c - '0')
                            : c <= 'F' ? static_cast<std::uint32_t>(c - 'A' + 10)
                                       : static_cast<std::uint32_t>(c - 'a' + 10);
    v = (v << 4) | d;
  }
  return v;
}

}  // namespace

json_root scan_json(std::string_view text, top_level_strings* sink, std::size_t max_depth) {
  return scanner{text, sink, max_depth}.run();
}

void unescape_json_string(std::string_view raw, std::string& out) {
  out.clear();
  out.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    // The text up to the next escape goes in one copy: outputs are long and
    // mostly plain.
    const std::size_t escape = std::min(raw.find('\\', i), raw.size());
    out.append(raw.data() + i, escape - i);
    i = escape;
    if (i == raw.size()) break;
    const char e = raw[++i];
    switch (e) {
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'u': {
        std::uint32_t cp = read_hex4(raw, i + 1);
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          const std::uint32_t low = read_hex4(raw, i + 3);
          i += 6;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        append_utf8(out, cp);
        break;
      }
      default:  // '"', '\\', '/'
        out.push_back(e);
    }
  }
}

}  // namespace sandgate::protocol::detail
