// Message builders: ids, dates, headers, replies and status messages.

#include <jupyter_protocol/message.hpp>

#include "json_text.hpp"

#include <openssl/rand.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <stdexcept>

namespace sandgate::protocol {

message message::clone() const {
  message copy;
  copy.identities = identities;
  copy.header = header;
  copy.parent_header = parent_header;
  copy.metadata = metadata;
  copy.content = content;
  copy.buffers = buffers;
  copy.head = head;
  copy.parent = parent;
  return copy;
}

std::string iso8601_now() {
  return iso8601(std::chrono::system_clock::now());
}

std::string iso8601(std::chrono::system_clock::time_point now) {
  const auto since_epoch = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch());
  const auto seconds = std::chrono::floor<std::chrono::seconds>(since_epoch);
  const auto micros = (since_epoch - seconds).count();
  const std::time_t t = static_cast<std::time_t>(seconds.count());
  std::tm utc{};
  gmtime_r(&t, &utc);
  std::array<char, 40> text{};
  const int n = std::snprintf(text.data(), text.size(), "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ",
                              utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min,
                              utc.tm_sec, static_cast<long>(micros));
  return std::string(text.data(), static_cast<std::size_t>(n));
}

std::optional<std::chrono::system_clock::time_point> parse_iso8601(std::string_view text) {
  // strptime wants a terminated string; a date is short.
  if (text.size() > 64) return std::nullopt;
  const std::string s(text);
  std::tm utc{};
  const char* p = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &utc);
  if (p == nullptr) return std::nullopt;
  const char* const end = s.c_str() + s.size();
  std::chrono::microseconds fraction{0};
  if (p != end && *p == '.') {
    ++p;
    long long micros = 0;
    int digits = 0;
    for (; p != end && *p >= '0' && *p <= '9'; ++p, ++digits)
      if (digits < 6) micros = micros * 10 + (*p - '0');
    if (digits == 0) return std::nullopt;
    for (; digits < 6; ++digits)
      micros *= 10;
    fraction = std::chrono::microseconds(micros);
  }
  std::chrono::seconds offset{0};
  if (p != end && *p == 'Z') {
    ++p;
  } else if (p != end && (*p == '+' || *p == '-')) {
    const int sign = *p == '-' ? -1 : 1;
    int hours = 0;
    int minutes = 0;
    int used = 0;
    if (std::sscanf(p + 1, "%2d:%2d%n", &hours, &minutes, &used) != 2 || used != 5 || hours > 23 ||
        minutes > 59)
      return std::nullopt;
    offset = std::chrono::seconds(sign * (hours * 3600 + minutes * 60));
    p += 1 + used;
  }
  if (p != end) return std::nullopt;
  const std::time_t t = timegm(&utc);
  if (t == static_cast<std::time_t>(-1)) return std::nullopt;
  return std::chrono::system_clock::time_point(std::chrono::seconds(t)) + fraction - offset;
}

std::string new_uuid4() {
  std::array<unsigned char, 16> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    throw std::runtime_error("RAND_bytes failed: no randomness for a UUID");
  }
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40);  // version 4
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant
  static constexpr char hex_digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(hex_digits[bytes[i] >> 4]);
    out.push_back(hex_digits[bytes[i] & 0xf]);
  }
  return out;
}

std::string header_json(const header_fields& h) {
  std::string out;
  out.reserve(160 + h.msg_id.size() + h.msg_type.size() + h.session.size() + h.username.size());
  out += "{\"msg_id\": ";
  detail::append_json_string(out, h.msg_id);
  out += ", \"msg_type\": ";
  detail::append_json_string(out, h.msg_type);
  out += ", \"session\": ";
  detail::append_json_string(out, h.session);
  out += ", \"username\": ";
  detail::append_json_string(out, h.username);
  out += ", \"date\": ";
  detail::append_json_string(out, h.date);
  out += ", \"version\": ";
  detail::append_json_string(out, h.version);
  out += '}';
  return out;
}

message make_message(std::string_view msg_type, std::string content, std::string_view session,
                     std::string_view username) {
  message m;
  m.head.msg_id = new_uuid4();
  m.head.msg_type = msg_type;
  m.head.session = session;
  m.head.username = username;
  m.head.date = iso8601_now();
  m.head.version = protocol_version;
  m.header = header_json(m.head);
  m.content = std::move(content);
  return m;
}

message make_reply(const message& request, std::string_view msg_type, std::string content) {
  message m = make_message(msg_type, std::move(content), request.head.session, request.head.username);
  m.identities = request.identities;
  m.parent_header = request.header;
  m.parent = request.head;
  return m;
}

message make_status(std::string_view execution_state, std::string_view session, const message* parent) {
  std::string content = "{\"execution_state\": ";
  detail::append_json_string(content, execution_state);
  content += '}';
  message m = make_message("status", std::move(content), session);
  if (parent != nullptr) {
    m.parent_header = parent->header;
    m.parent = parent->head;
  }
  return m;
}

}  // namespace sandgate::protocol
