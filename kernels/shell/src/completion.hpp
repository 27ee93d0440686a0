// Tab completion for bash cells: which word is being completed, and the
// compgen line that lists its candidates in the kernel's own shell.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sandgate::shell_kernel {

enum class completion_kind { command, file, variable };

struct completion_query {
  std::size_t start_bytes = 0;  // where the word starts in the code
  std::size_t end_bytes = 0;    // the cursor
  std::string word;             // text being completed, without the sigil
  std::string sigil;            // "$" or "${" before a variable name, else empty
  completion_kind kind = completion_kind::file;
};

// Finds the word that ends at the cursor and whether it is in command
// position (start of a line or after ; | & ( { && || or a keyword like then).
completion_query analyse_completion(std::string_view code, std::size_t cursor_bytes);

// A bash command line printing candidates one per line (directories with a
// trailing '/'), at most max_matches of them.
std::string compgen_line(const completion_query& query, std::size_t max_matches);

// The protocol counts cursor positions in Unicode code points.
std::size_t code_points_to_bytes(std::string_view utf8, std::size_t code_points);
std::size_t bytes_to_code_points(std::string_view utf8, std::size_t bytes);

// 'text' quoted for bash.
std::string single_quote(std::string_view text);

}  // namespace sandgate::shell_kernel
