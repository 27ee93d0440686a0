#include "authenticator.hpp"

#include <gateway/ids.hpp>

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <stdexcept>

namespace sandgate::gateway {
namespace {

std::string digest_of(std::string_view secret) {
  std::string d(SHA256_DIGEST_LENGTH, '\0');
  SHA256(reinterpret_cast<const unsigned char*>(secret.data()), secret.size(),
         reinterpret_cast<unsigned char*>(d.data()));
  return d;
}

bool same_digest(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string_view strip_scheme(std::string_view header) {
  for (std::string_view scheme : {"token ", "Token ", "Bearer ", "bearer "})
    if (header.substr(0, scheme.size()) == scheme) return header.substr(scheme.size());
  return {};
}

std::optional<std::string> hex_to_bytes(const std::string& hex) {
  if (hex.size() != 2 * SHA256_DIGEST_LENGTH) return std::nullopt;
  std::string out;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    auto nibble = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    const int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

std::optional<std::uint64_t> quota(const nlohmann::json& q, const char* key, const std::string& where) {
  if (!q.contains(key) || q[key].is_null()) return std::nullopt;
  if (!q[key].is_number_unsigned())
    throw std::runtime_error(where + ": quotas." + key + " must be a whole number");
  return q[key].get<std::uint64_t>();
}

}  // namespace

authenticator::authenticator(std::string token, const std::filesystem::path& tokens_file)
    : token_digest_(digest_of(token)), token_(std::move(token)) {
  if (tokens_file.empty()) return;
  std::ifstream in(tokens_file);
  if (!in) throw std::runtime_error("cannot read the tokens file " + tokens_file.string());
  const auto doc = nlohmann::json::parse(in, nullptr, false);
  const std::string where = "tokens file " + tokens_file.string();
  if (!doc.is_object() || !doc.contains("principals") || !doc["principals"].is_array())
    throw std::runtime_error(where + ": expected {\"principals\": [{\"name\", \"token_sha256\", ...}]}");
  std::set<std::string> names;
  for (const auto& p : doc["principals"]) {
    if (!p.is_object() || !p.contains("name") || !p["name"].is_string() ||
        p["name"].get<std::string>().empty())
      throw std::runtime_error(where + ": every principal needs a non-empty \"name\"");
    entry e;
    e.who.name = p["name"].get<std::string>();
    const std::string at = where + ", principal " + e.who.name;
    if (!names.insert(e.who.name).second) throw std::runtime_error(at + ": the name is used twice");
    const auto digest = p.contains("token_sha256") && p["token_sha256"].is_string()
                            ? hex_to_bytes(p["token_sha256"].get<std::string>())
                            : std::nullopt;
    if (!digest)
      throw std::runtime_error(at + ": \"token_sha256\" must be 64 hex digits (sha256sum of the token)");
    e.digest = *digest;
    e.who.admin = p.value("admin", false);
    if (e.who.name == "admin" && !e.who.admin)
      throw std::runtime_error(at + ": the name \"admin\" is the gateway's own token's");
    if (p.contains("quotas")) {
      const auto& q = p["quotas"];
      if (!q.is_object()) throw std::runtime_error(at + ": \"quotas\" must be an object");
      e.who.limits.sandboxes = quota(q, "sandboxes", at);
      e.who.limits.kernels = quota(q, "kernels", at);
      e.who.limits.memory_bytes = quota(q, "memory_bytes", at);
    }
    principals_.push_back(std::move(e));
  }
}

auth_result authenticator::check(std::string_view authorization, std::string_view query_token,
                                 principal& who) const {
  who = principal{"admin", true, {}};
  if (!enabled()) return auth_result::ok;
  std::string_view presented = strip_scheme(authorization);
  if (presented.empty()) presented = query_token;
  if (presented.empty()) return auth_result::missing;
  const std::string digest = digest_of(presented);
  // Every entry is compared, so the time taken does not say which matched.
  bool found = !token_.empty() && same_digest(digest, token_digest_);
  for (const auto& e : principals_)
    if (same_digest(digest, e.digest) && !found) {
      who = e.who;
      found = true;
    }
  return found ? auth_result::ok : auth_result::wrong;
}

std::string generate_token() {
  return random_hex(24);
}

}  // namespace sandgate::gateway
