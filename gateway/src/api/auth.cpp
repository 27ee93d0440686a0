#include "auth.hpp"

#include <gateway/ids.hpp>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <stdexcept>

namespace sandgate::gateway {
namespace {

// Compares digests, so the time taken says nothing about length or content.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned char da[SHA256_DIGEST_LENGTH], db[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(a.data()), a.size(), da);
  SHA256(reinterpret_cast<const unsigned char*>(b.data()), b.size(), db);
  return CRYPTO_memcmp(da, db, sizeof da) == 0;
}

std::string_view strip_scheme(std::string_view header) {
  for (std::string_view scheme : {"token ", "Token ", "Bearer ", "bearer "})
    if (header.substr(0, scheme.size()) == scheme) return header.substr(scheme.size());
  return {};
}

}  // namespace

auth_result authenticator::check(std::string_view authorization, std::string_view query_token) const {
  if (!enabled()) return auth_result::ok;
  std::string_view presented = strip_scheme(authorization);
  if (presented.empty()) presented = query_token;
  if (presented.empty()) return auth_result::missing;
  return same_secret(presented, token_) ? auth_result::ok : auth_result::wrong;
}

std::string generate_token() {
  return random_hex(24);
}

}  // namespace sandgate::gateway
