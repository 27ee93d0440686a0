#pragma once
// A Jupyter message as a move-only value. header, parent_header, metadata and
// content hold the exact JSON text received; only the header fields needed
// for routing are parsed (once, by the decoders). Nothing is re-serialised.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace sandgate::protocol {

inline constexpr std::string_view protocol_version = "5.3";

// The routing-relevant fields of a header (or parent_header).
struct header_fields {
  std::string msg_id;
  std::string msg_type;
  std::string session;
  std::string username;
  std::string date;
  std::string version;
};

struct message {
  message() = default;
  message(message&&) noexcept = default;
  message& operator=(message&&) noexcept = default;
  message(const message&) = delete;
  message& operator=(const message&) = delete;

  // Explicit deep copy, for the rare place that needs one.
  [[nodiscard]] message clone() const;

  std::vector<std::string> identities;  // ZeroMQ routing prefix
  std::string header = "{}";            // raw JSON text
  std::string parent_header = "{}";     // raw JSON text
  std::string metadata = "{}";          // raw JSON text
  std::string content = "{}";           // raw JSON text
  std::vector<std::string> buffers;

  header_fields head;    // parsed from header by the decoders / builders
  header_fields parent;  // parsed from parent_header (empty fields when {})

  [[nodiscard]] const std::string& msg_id() const noexcept { return head.msg_id; }
  [[nodiscard]] const std::string& msg_type() const noexcept { return head.msg_type; }
  [[nodiscard]] const std::string& session() const noexcept { return head.session; }
};

// ISO 8601 UTC with zero-padded microseconds: 2026-11-29T10:11:53.000123Z
[[nodiscard]] std::string iso8601_now();
[[nodiscard]] std::string iso8601(std::chrono::system_clock::time_point t);
// A header's date: YYYY-MM-DDTHH:MM:SS, optionally a fraction of a second,
// then Z, a +HH:MM / -HH:MM offset, or nothing (taken as UTC, as
// jupyter_client does). nullopt for anything else.
[[nodiscard]] std::optional<std::chrono::system_clock::time_point> parse_iso8601(std::string_view text);

// A random UUID4 in canonical 8-4-4-4-12 form.
[[nodiscard]] std::string new_uuid4();

// Serialise a header (msg_id, msg_type, session, username, date, version).
[[nodiscard]] std::string header_json(const header_fields& h);

// Parse a header/parent_header JSON text into its routing fields. An empty
// object gives empty fields. Returns an error for bad JSON or a non-object;
// `require_ids` demands msg_id and msg_type as strings (session may be
// absent or empty: clients are not consistent about it).
[[nodiscard]] std::error_code parse_header(std::string_view json, header_fields& out, bool require_ids);

// The top-level string member `key` of a JSON object text, unescaped, read
// in one validating pass without building a document. nullopt when the text
// is not a valid JSON object or the member is missing or not a string; of
// repeated keys the last counts, as in a parsed document.
[[nodiscard]] std::optional<std::string> string_member(std::string_view json, std::string_view key);

// A new message with a fresh msg_id and date. content must be a JSON object text.
[[nodiscard]] message make_message(std::string_view msg_type, std::string content, std::string_view session,
                                   std::string_view username = "sandgate");

// A reply to `request`: parent_header is the request's header text verbatim,
// session and username follow the request.
[[nodiscard]] message make_reply(const message& request, std::string_view msg_type, std::string content);

// An iopub status message {"execution_state": state} with `parent` as parent (may be null).
[[nodiscard]] message make_status(std::string_view execution_state, std::string_view session,
                                  const message* parent);

}  // namespace sandgate::protocol
