#pragma once
// JSON that comes from outside the gateway (a kernel's message, a request
// body, a peer's answer, a stored record) becomes a document only when it is
// valid and nests at most protocol::max_json_depth deep: copying a document
// or writing it out recurses once per level.

#include <jupyter_protocol/json_members.hpp>

#include <nlohmann/json.hpp>

#include <string_view>

namespace sandgate::gateway {

// The document, or a discarded value (is_discarded()) for text that is not
// valid JSON or nests too deep.
[[nodiscard]] inline nlohmann::json parse_json(std::string_view text) {
  if (!protocol::valid_json(text)) return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

}  // namespace sandgate::gateway
