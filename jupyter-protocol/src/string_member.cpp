// string_member and read_members: top-level members of a JSON object, read in one
// validating pass (json_scanner) without building a document; valid_json.

#include <jupyter_protocol/json_members.hpp>
#include <jupyter_protocol/message.hpp>

#include "json_scanner.hpp"

#include <charconv>

namespace sandgate::protocol {
namespace {

// Keeps the value of the last top-level member named `key`, if a string.
class member_sink final : public detail::top_level_strings {
 public:
  member_sink(std::string_view key, std::optional<std::string>& out) : key_(key), out_(out) {}

  void on_string(std::string_view key, bool key_escaped, std::string_view value,
                 bool value_escaped) override {
    if (!is_key(key, key_escaped)) return;
    out_.emplace();
    if (value_escaped) {
      detail::unescape_json_string(value, *out_);
    } else {
      out_->assign(value);
    }
  }

  void on_other(std::string_view key, bool key_escaped) override {
    if (is_key(key, key_escaped)) out_.reset();  // a later duplicate that is not a string wins
  }

 private:
  bool is_key(std::string_view key, bool key_escaped) {
    if (!key_escaped) return key == key_;
    detail::unescape_json_string(key, key_buffer_);
    return key_buffer_ == key_;
  }

  std::string_view key_;
  std::optional<std::string>& out_;
  std::string key_buffer_;
};

// Fills the members whose keys it meets; of repeated keys the last counts.
class members_sink final : public detail::top_level_strings {
 public:
  explicit members_sink(std::span<json_member> members) : members_(members) {}

  void on_string(std::string_view key, bool key_escaped, std::string_view value,
                 bool value_escaped) override {
    json_member* m = find(key, key_escaped);
    if (m == nullptr) return;
    m->integer.reset();
    m->string.emplace();
    if (value_escaped) {
      detail::unescape_json_string(value, *m->string);
    } else {
      m->string->assign(value);
    }
  }

  void on_other(std::string_view key, bool key_escaped) override {
    if (json_member* m = find(key, key_escaped)) {
      m->string.reset();
      m->integer.reset();
    }
  }

  void on_value(std::string_view key, bool key_escaped, std::string_view value) override {
    if (json_member* m = find(key, key_escaped)) m->raw = value;
  }

  void on_number(std::string_view key, bool key_escaped, std::string_view number) override {
    json_member* m = find(key, key_escaped);
    if (m == nullptr || number.find_first_of(".eE") != std::string_view::npos) return;
    std::int64_t n = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), n);
    if (ec == std::errc() && end == number.data() + number.size()) m->integer = n;
  }

 private:
  json_member* find(std::string_view key, bool key_escaped) {
    if (key_escaped) {
      detail::unescape_json_string(key, key_buffer_);
      key = key_buffer_;
    }
    for (auto& m : members_)
      if (m.key == key) return &m;
    return nullptr;
  }

  std::span<json_member> members_;
  std::string key_buffer_;
};

}  // namespace

bool read_members(std::string_view json, std::span<json_member> members) {
  auto clear = [members] {
    for (auto& m : members) {
      m.string.reset();
      m.integer.reset();
      m.raw.reset();
    }
  };
  clear();
  members_sink sink{members};
  if (detail::scan_json(json, &sink, max_json_depth) == detail::json_root::object) return true;
  clear();
  return false;
}

bool valid_json(std::string_view text, std::size_t max_depth) {
  return detail::scan_json(text, nullptr, max_depth) != detail::json_root::invalid;
}

std::optional<std::string> string_member(std::string_view json, std::string_view key) {
  std::optional<std::string> value;
  member_sink sink{key, value};
  if (detail::scan_json(json, &sink) != detail::json_root::object) return std::nullopt;
  return value;
}

}  // namespace sandgate::protocol
