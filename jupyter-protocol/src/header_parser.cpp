// parse_header: the routing fields of a header, read with a SAX pass (no DOM).

#include <jupyter_protocol/errors.hpp>
#include <jupyter_protocol/message.hpp>

#include "json_text.hpp"

#include <nlohmann/json.hpp>

namespace sandgate::protocol {
namespace {

using json = nlohmann::json;

// Collects the top-level string members that header_fields holds.
class header_sax {
 public:
  explicit header_sax(header_fields& out) : out_(out) {}

  bool null() { return value_done(); }
  bool boolean(bool) { return value_done(); }
  bool number_integer(json::number_integer_t) { return value_done(); }
  bool number_unsigned(json::number_unsigned_t) { return value_done(); }
  bool number_float(json::number_float_t, const json::string_t&) { return value_done(); }
  bool binary(json::binary_t&) { return value_done(); }

  bool string(json::string_t& value) {
    if (depth_ == 0) return not_object();
    if (depth_ == 1 && target_ != nullptr) {
      *target_ = std::move(value);
      if (target_ == &out_.msg_id) seen_msg_id_ = true;
      if (target_ == &out_.msg_type) seen_msg_type_ = true;
    }
    target_ = nullptr;
    return true;
  }

  bool start_object(std::size_t) {
    ++depth_;
    target_ = nullptr;
    return true;
  }
  bool end_object() {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) {
    if (depth_ == 0) return not_object();
    ++depth_;
    target_ = nullptr;
    return true;
  }
  bool end_array() {
    --depth_;
    return true;
  }

  bool key(json::string_t& name) {
    target_ = nullptr;
    if (depth_ != 1) return true;
    if (name == "msg_id") {
      target_ = &out_.msg_id;
    } else if (name == "msg_type") {
      target_ = &out_.msg_type;
    } else if (name == "session") {
      target_ = &out_.session;
    } else if (name == "username") {
      target_ = &out_.username;
    } else if (name == "date") {
      target_ = &out_.date;
    } else if (name == "version") {
      target_ = &out_.version;
    }
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

  [[nodiscard]] bool not_an_object() const noexcept { return not_object_; }
  [[nodiscard]] bool has_ids() const noexcept { return seen_msg_id_ && seen_msg_type_; }

 private:
  bool value_done() {
    if (depth_ == 0) return not_object();
    target_ = nullptr;
    return true;
  }
  bool not_object() {
    not_object_ = true;
    return false;
  }

  header_fields& out_;
  std::string* target_ = nullptr;
  int depth_ = 0;
  bool not_object_ = false;
  bool seen_msg_id_ = false;
  bool seen_msg_type_ = false;
};

}  // namespace

std::error_code parse_header(std::string_view text, header_fields& out, bool require_ids) {
  out = header_fields{};
  if (detail::contains_nul(text)) return protocol_errc::bad_json;
  header_sax sax{out};
  const bool ok = json::sax_parse(text.data(), text.data() + text.size(), &sax);
  if (!ok) {
    out = header_fields{};
    if (sax.not_an_object())
      return json::accept(text) ? protocol_errc::not_an_object : protocol_errc::bad_json;
    return protocol_errc::bad_json;
  }
  // session may be empty or absent: some clients send messages before they
  // have one, and nothing routes on it alone.
  if (require_ids && !sax.has_ids()) return protocol_errc::missing_field;
  return {};
}

}  // namespace sandgate::protocol
