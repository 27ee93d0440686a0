#include "completion.hpp"

#include <array>
#include <cstdint>

namespace sandgate::shell_kernel {
namespace {

bool is_word_break(char c) {
  static constexpr std::string_view breaks = " \t\n;|&()<>{}`'\"=";
  return breaks.find(c) != std::string_view::npos;
}

bool in_command_position(std::string_view before) {
  while (!before.empty() && (before.back() == ' ' || before.back() == '\t')) {
    before.remove_suffix(1);
  }
  if (before.empty()) {
    return true;
  }
  if (std::string_view("\n;|&({`").find(before.back()) != std::string_view::npos) {
    return true;
  }
  static constexpr std::array<std::string_view, 10> keywords{"then",  "do",    "else", "elif", "if",
                                                             "while", "until", "time", "!",    "sudo"};
  for (const auto keyword : keywords) {
    if (before.ends_with(keyword)) {
      const auto at = before.size() - keyword.size();
      if (at == 0 || is_word_break(before[at - 1])) {
        return true;
      }
    }
  }
  return false;
}

bool is_continuation_byte(char c) {
  return (static_cast<std::uint8_t>(c) & 0xC0) == 0x80;
}

}  // namespace

completion_query analyse_completion(std::string_view code, std::size_t cursor_bytes) {
  cursor_bytes = std::min(cursor_bytes, code.size());
  std::size_t start = cursor_bytes;
  while (start > 0 && !is_word_break(code[start - 1])) {
    --start;
  }
  completion_query query;
  query.start_bytes = start;
  query.end_bytes = cursor_bytes;
  query.word = std::string(code.substr(start, cursor_bytes - start));
  if (query.word.starts_with('$')) {
    query.kind = completion_kind::variable;
    query.sigil = "$";
    query.word.erase(0, 1);
  } else if (start >= 2 && code.substr(start - 2, 2) == "${") {
    query.kind = completion_kind::variable;  // the word starts after the brace
  } else if (query.word.find('/') == std::string::npos && in_command_position(code.substr(0, start))) {
    query.kind = completion_kind::command;
  }
  return query;
}

std::string compgen_line(const completion_query& query, std::size_t max_matches) {
  const std::string word = single_quote(query.word);
  const std::string limit = " | head -n " + std::to_string(max_matches);
  switch (query.kind) {
    case completion_kind::variable:
      return "compgen -v -- " + word + " | sort -u" + limit;
    case completion_kind::command:
      return "compgen -c -- " + word + " | sort -u" + limit;
    case completion_kind::file:
      break;
  }
  return "compgen -f -- " + word +
         " | sort -u | while IFS= read -r f; do if [[ -d $f ]]; then printf '%s/\\n' \"$f\"; "
         "else printf '%s\\n' \"$f\"; fi; done" +
         limit;
}

std::size_t code_points_to_bytes(std::string_view utf8, std::size_t code_points) {
  std::size_t bytes = 0;
  while (bytes < utf8.size() && code_points > 0) {
    ++bytes;
    while (bytes < utf8.size() && is_continuation_byte(utf8[bytes])) {
      ++bytes;
    }
    --code_points;
  }
  return bytes;
}

std::size_t bytes_to_code_points(std::string_view utf8, std::size_t bytes) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < bytes && i < utf8.size(); ++i) {
    if (!is_continuation_byte(utf8[i])) {
      ++count;
    }
  }
  return count;
}

std::string single_quote(std::string_view text) {
  std::string quoted = "'";
  for (const char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted.push_back(c);
    }
  }
  quoted.push_back('\'');
  return quoted;
}

}  // namespace sandgate::shell_kernel
