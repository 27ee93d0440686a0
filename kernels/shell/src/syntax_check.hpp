// Whether a cell is a complete bash program (is_complete_request).
#pragma once

#include <string>
#include <string_view>

namespace sandgate::shell_kernel {

enum class completeness { complete, incomplete, invalid, unknown };

// Runs `bash -n` on the code (a fresh process: nothing is executed).
// Unterminated constructs (if/while/case, quotes, here-documents, a trailing
// backslash) are incomplete; other syntax errors are invalid.
completeness check_syntax(std::string_view code, const std::string& bash_path);

const char* to_string(completeness value);

}  // namespace sandgate::shell_kernel
