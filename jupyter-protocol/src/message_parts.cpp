// Validation and copy of client-sent message parts (WebSocket decoders).

#include "message_parts.hpp"

#include "json_text.hpp"

#include <jupyter_protocol/errors.hpp>

namespace sandgate::protocol::detail {
namespace {

std::error_code check_object(std::string_view text, bool already_valid_json) {
  if (text.empty()) return {};
  if (!already_valid_json) return check_json_object(text);
  const std::size_t pos = skip_whitespace(text, 0);
  return pos < text.size() && text[pos] == '{' ? std::error_code{} : protocol_errc::not_an_object;
}

std::string or_empty_object(std::string_view text) {
  return text.empty() ? std::string("{}") : std::string(text);
}

}  // namespace

std::error_code fill_message(const message_parts& parts, bool already_valid_json, message& out) {
  header_fields head;
  if (auto ec = parse_header(parts.header, head, /*require_ids=*/true)) return ec;
  header_fields parent;
  if (!parts.parent_header.empty()) {
    if (auto ec = parse_header(parts.parent_header, parent, /*require_ids=*/false)) return ec;
  }
  if (auto ec = check_object(parts.metadata, already_valid_json)) return ec;
  if (auto ec = check_object(parts.content, already_valid_json)) return ec;

  out.identities.clear();
  out.header = std::string(parts.header);
  out.parent_header = or_empty_object(parts.parent_header);
  out.metadata = or_empty_object(parts.metadata);
  out.content = or_empty_object(parts.content);
  out.head = std::move(head);
  out.parent = std::move(parent);
  return {};
}

}  // namespace sandgate::protocol::detail
