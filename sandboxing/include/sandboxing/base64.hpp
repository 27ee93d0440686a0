// Base64 (RFC 4648, standard alphabet, with padding) for the control
// protocol's binary fields: a child's stdin and its captured output.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sandgate::sandboxing::control {

// Appends the base64 text of raw to out.
void base64_append(std::string& out, std::string_view raw);
std::string base64_encode(std::string_view raw);
// The bytes of text, or nullopt when text is not canonical padded base64
// (length not a multiple of 4, a byte outside the alphabet, misplaced '=').
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace sandgate::sandboxing::control
