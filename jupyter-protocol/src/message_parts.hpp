#pragma once
// Checks shared by the WebSocket decoders for the four JSON parts a client
// sends: header (with ids), parent_header, metadata and content (objects;
// an absent or empty part counts as "{}").

#include <jupyter_protocol/message.hpp>

#include <string_view>
#include <system_error>

namespace sandgate::protocol::detail {

struct message_parts {
  std::string_view header;
  std::string_view parent_header;  // empty: absent
  std::string_view metadata;       // empty: absent
  std::string_view content;        // empty: absent
};

// `already_valid_json` skips the full JSON validation of metadata/content
// when the caller has validated the enclosing text already.
[[nodiscard]] std::error_code fill_message(const message_parts& parts, bool already_valid_json, message& out);

}  // namespace sandgate::protocol::detail
