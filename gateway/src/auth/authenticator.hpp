#pragma once
// Token authentication: "Authorization: token T", "Authorization: Bearer T"
// or "?token=T" (for WebSocket clients that cannot set headers). The
// gateway's own token (--auth-token) is the admin principal; a tokens file
// (--tokens-file) maps the SHA-256 of other tokens to principals, each with
// optional quotas. Tokens are compared by digest, in constant time.
// An empty configured token and no tokens file turns auth off.

#include "principal.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::gateway {

enum class auth_result { ok, missing, wrong };

class authenticator {
 public:
  // `token`: the admin's; `tokens_file`: empty for none. Throws
  // std::runtime_error with a message for the operator on a bad file.
  explicit authenticator(std::string token, const std::filesystem::path& tokens_file = {});

  [[nodiscard]] bool enabled() const noexcept { return !token_.empty() || !principals_.empty(); }
  // `authorization`: the header value (may be empty); `query_token`: ?token= (may be empty).
  [[nodiscard]] auth_result check(std::string_view authorization, std::string_view query_token,
                                  principal& who) const;

 private:
  struct entry {
    std::string digest;  // SHA-256 of the token, 32 raw bytes
    principal who;
  };
  std::string token_digest_;
  std::string token_;
  std::vector<entry> principals_;
};

// A fresh random token (48 hex digits).
[[nodiscard]] std::string generate_token();

}  // namespace sandgate::gateway
