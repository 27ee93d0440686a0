// HMAC-SHA256 signing with OpenSSL 3's EVP_MAC: one context per call, copied
// from a context keyed once per signer.

#include <jupyter_protocol/errors.hpp>
#include <jupyter_protocol/signer.hpp>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <array>
#include <memory>
#include <stdexcept>

namespace sandgate::protocol {
namespace {

constexpr std::size_t digest_bytes = 32;
constexpr std::size_t hex_digest_chars = 2 * digest_bytes;

struct mac_deleter {
  void operator()(EVP_MAC* mac) const noexcept { EVP_MAC_free(mac); }
};
struct mac_ctx_deleter {
  void operator()(EVP_MAC_CTX* ctx) const noexcept { EVP_MAC_CTX_free(ctx); }
};
using unique_mac = std::unique_ptr<EVP_MAC, mac_deleter>;
using unique_mac_ctx = std::unique_ptr<EVP_MAC_CTX, mac_ctx_deleter>;

// The HMAC algorithm, fetched once; an EVP_MAC is immutable and may be shared
// between threads.
EVP_MAC* hmac_algorithm() {
  static const unique_mac mac{EVP_MAC_fetch(nullptr, OSSL_MAC_NAME_HMAC, nullptr)};
  if (!mac) throw std::runtime_error("OpenSSL: EVP_MAC_fetch(HMAC) failed");
  return mac.get();
}

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

// An HMAC-SHA256 context initialised with the key once (OpenSSL derives the
// inner and outer pads there). It is never updated: each signature works on
// an EVP_MAC_CTX_dup of it, which only reads it, so it is shared freely.
struct signer::keyed_mac {
  unique_mac_ctx ctx;

  [[nodiscard]] std::array<unsigned char, digest_bytes> digest(std::string_view header,
                                                               std::string_view parent_header,
                                                               std::string_view metadata,
                                                               std::string_view content) const {
    unique_mac_ctx call{EVP_MAC_CTX_dup(ctx.get())};
    if (!call) throw std::runtime_error("OpenSSL: EVP_MAC_CTX_dup failed");
    for (const std::string_view part : {header, parent_header, metadata, content}) {
      if (EVP_MAC_update(call.get(), reinterpret_cast<const unsigned char*>(part.data()), part.size()) != 1) {
        throw std::runtime_error("OpenSSL: EVP_MAC_update failed");
      }
    }
    std::array<unsigned char, digest_bytes> out{};
    std::size_t length = 0;
    if (EVP_MAC_final(call.get(), out.data(), &length, out.size()) != 1 || length != out.size()) {
      throw std::runtime_error("OpenSSL: EVP_MAC_final failed");
    }
    return out;
  }
};

signer::signer(std::string key, std::string_view scheme) : key_(std::move(key)) {
  if (scheme != "hmac-sha256") {
    throw std::invalid_argument("unsupported signature_scheme \"" + std::string(scheme) +
                                "\": only \"hmac-sha256\" is supported");
  }
  if (key_.empty()) return;
  auto keyed = std::make_shared<keyed_mac>();
  keyed->ctx.reset(EVP_MAC_CTX_new(hmac_algorithm()));
  if (!keyed->ctx) throw std::runtime_error("OpenSSL: EVP_MAC_CTX_new failed");
  char digest_name[] = "SHA256";
  const std::array<OSSL_PARAM, 2> params{
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0), OSSL_PARAM_construct_end()};
  if (EVP_MAC_init(keyed->ctx.get(), reinterpret_cast<const unsigned char*>(key_.data()), key_.size(),
                   params.data()) != 1) {
    throw std::runtime_error("OpenSSL: EVP_MAC_init(HMAC-SHA256) failed");
  }
  mac_ = std::move(keyed);
}

std::string signer::sign(std::string_view header, std::string_view parent_header, std::string_view metadata,
                         std::string_view content) const {
  if (!enabled()) return {};
  static constexpr char hex_digits[] = "0123456789abcdef";
  const auto digest = mac_->digest(header, parent_header, metadata, content);
  std::string out(hex_digest_chars, '0');
  for (std::size_t i = 0; i < digest.size(); ++i) {
    out[2 * i] = hex_digits[digest[i] >> 4];
    out[2 * i + 1] = hex_digits[digest[i] & 0xf];
  }
  return out;
}

std::error_code signer::verify(std::string_view signature, std::string_view header,
                               std::string_view parent_header, std::string_view metadata,
                               std::string_view content) const {
  if (!enabled()) return signature.empty() ? std::error_code{} : protocol_errc::bad_signature_length;
  if (signature.size() != hex_digest_chars) return protocol_errc::bad_signature_length;
  std::array<unsigned char, digest_bytes> received{};
  for (std::size_t i = 0; i < received.size(); ++i) {
    const int high = hex_value(signature[2 * i]);
    const int low = hex_value(signature[2 * i + 1]);
    if (high < 0 || low < 0) return protocol_errc::bad_signature_hex;
    received[i] = static_cast<unsigned char>((high << 4) | low);
  }
  const auto expected = mac_->digest(header, parent_header, metadata, content);
  if (CRYPTO_memcmp(received.data(), expected.data(), expected.size()) != 0)
    return protocol_errc::signature_mismatch;
  return {};
}

}  // namespace sandgate::protocol
