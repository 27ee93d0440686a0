#pragma once
// Token authentication: "Authorization: token T", "Authorization: Bearer T"
// or "?token=T" (for WebSocket clients that cannot set headers), compared in
// constant time. An empty configured token turns auth off.

#include <optional>
#include <string>
#include <string_view>

namespace sandgate::gateway {

enum class auth_result { ok, missing, wrong };

class authenticator {
 public:
  explicit authenticator(std::string token) : token_(std::move(token)) {}

  [[nodiscard]] bool enabled() const noexcept { return !token_.empty(); }
  // `authorization`: the header value (may be empty); `query_token`: ?token= (may be empty).
  [[nodiscard]] auth_result check(std::string_view authorization, std::string_view query_token) const;

 private:
  std::string token_;
};

// A fresh random token (48 hex digits).
[[nodiscard]] std::string generate_token();

}  // namespace sandgate::gateway
