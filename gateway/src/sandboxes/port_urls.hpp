#pragma once
// Signed, short-lived access to one port of one sandbox, for browsers that
// cannot send a token header: "<expires_at>.<hmac>" where the HMAC-SHA256
// (keyed with a secret the gateway keeps in its state dir, 0600, made at its
// first start) covers the sandbox id, the port and the expiry. A token is
// good for nothing else; it cannot be extended or moved to another port.

#include <cstdint>
#include <filesystem>
#include <string>

#include <jupyter_protocol/signer.hpp>

namespace sandgate::gateway {

class port_urls {
 public:
  // Reads the key at `key_file`, making it when missing. Throws std::runtime_error when it cannot.
  explicit port_urls(const std::filesystem::path& key_file);

  [[nodiscard]] std::string token(const std::string& sandbox_id, std::uint16_t port,
                                  std::int64_t expires_at) const;
  // True for a token of this sandbox and port whose expiry is after `now` (unix seconds).
  [[nodiscard]] bool valid(std::string_view token, const std::string& sandbox_id, std::uint16_t port,
                           std::int64_t now) const;

 private:
  [[nodiscard]] std::string subject(const std::string& sandbox_id, std::uint16_t port,
                                    std::int64_t expires_at) const;

  protocol::signer signer_;
};

}  // namespace sandgate::gateway
