// parse_header: the routing fields of a header, read in one validating pass
// (json_scanner) without building a document.

#include <jupyter_protocol/errors.hpp>
#include <jupyter_protocol/message.hpp>

#include "json_scanner.hpp"

namespace sandgate::protocol {
namespace {

// Keeps the top-level string members that header_fields holds.
class header_sink final : public detail::top_level_strings {
 public:
  explicit header_sink(header_fields& out) : out_(out) {}

  void on_string(std::string_view key, bool key_escaped, std::string_view value,
                 bool value_escaped) override {
    if (key_escaped) {
      detail::unescape_json_string(key, key_buffer_);
      key = key_buffer_;
    }
    std::string* target = nullptr;
    if (key == "msg_id") {
      target = &out_.msg_id;
      seen_msg_id_ = true;
    } else if (key == "msg_type") {
      target = &out_.msg_type;
      seen_msg_type_ = true;
    } else if (key == "session") {
      target = &out_.session;
    } else if (key == "username") {
      target = &out_.username;
    } else if (key == "date") {
      target = &out_.date;
    } else if (key == "version") {
      target = &out_.version;
    } else {
      return;
    }
    if (value_escaped) {
      detail::unescape_json_string(value, *target);
    } else {
      target->assign(value);
    }
  }

  [[nodiscard]] bool has_ids() const noexcept { return seen_msg_id_ && seen_msg_type_; }

 private:
  header_fields& out_;
  std::string key_buffer_;
  bool seen_msg_id_ = false;
  bool seen_msg_type_ = false;
};

}  // namespace

std::error_code parse_header(std::string_view text, header_fields& out, bool require_ids) {
  out = header_fields{};
  header_sink sink{out};
  const auto root = detail::scan_json(text, &sink);
  if (root != detail::json_root::object) {
    out = header_fields{};
    return root == detail::json_root::invalid ? protocol_errc::bad_json : protocol_errc::not_an_object;
  }
  // session may be empty or absent: some clients send messages before they
  // have one, and nothing routes on it alone.
  if (require_ids && !sink.has_ids()) return protocol_errc::missing_field;
  return {};
}

}  // namespace sandgate::protocol
