#pragma once
// HMAC-SHA256 message signing, as Jupyter defines it: hex digest of
// header, parent_header, metadata and content in that order. An empty key
// means unsigned. Each call works on its own copy of an HMAC context keyed
// once at construction (never modified afterwards), so a signer is safe to
// use from any thread without locking.

#include <memory>
#include <string>
#include <string_view>
#include <system_error>

namespace sandgate::protocol {

class signer {
 public:
  signer() = default;  // unsigned
  // Throws std::invalid_argument for a scheme other than "hmac-sha256".
  signer(std::string key, std::string_view scheme = "hmac-sha256");

  [[nodiscard]] bool enabled() const noexcept { return !key_.empty(); }

  // 64 lowercase hex digits, or "" when unsigned.
  [[nodiscard]] std::string sign(std::string_view header, std::string_view parent_header,
                                 std::string_view metadata, std::string_view content) const;

  // Checks length, hex digits, then compares in constant time.
  [[nodiscard]] std::error_code verify(std::string_view signature, std::string_view header,
                                       std::string_view parent_header, std::string_view metadata,
                                       std::string_view content) const;

 private:
  struct keyed_mac;  // OpenSSL HMAC-SHA256 context with the key set; private to signer.cpp

  std::string key_;
  std::shared_ptr<const keyed_mac> mac_;
};

}  // namespace sandgate::protocol
