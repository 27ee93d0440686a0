#include <gateway/ids.hpp>

#include <openssl/rand.h>

#include <array>
#include <cctype>
#include <stdexcept>

namespace sandgate::gateway {

std::string new_id(std::uint16_t node) {
  std::array<unsigned char, 16> b{};
  if (RAND_bytes(b.data(), static_cast<int>(b.size())) != 1) throw std::runtime_error("RAND_bytes failed");
  b[0] = static_cast<unsigned char>(node >> 8);
  b[1] = static_cast<unsigned char>(node & 0xff);
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x80);  // version 8
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 9562 variant
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(hex[b[i] >> 4]);
    out.push_back(hex[b[i] & 0x0f]);
  }
  return out;
}

std::string random_hex(std::size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1)
    throw std::runtime_error("RAND_bytes failed");
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  for (unsigned char b : raw) {
    out.push_back(hex[b >> 4]);
    out.push_back(hex[b & 15]);
  }
  return out;
}

bool is_uuid(std::string_view t) {
  if (t.size() != 36) return false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? t[i] != '-' : !std::isxdigit(static_cast<unsigned char>(t[i]))) return false;
  }
  return true;
}

std::optional<std::uint16_t> id_node(std::string_view id) {
  if (!is_uuid(id)) return std::nullopt;
  return static_cast<std::uint16_t>(std::stoul(std::string(id.substr(0, 4)), nullptr, 16));
}

}  // namespace sandgate::gateway
