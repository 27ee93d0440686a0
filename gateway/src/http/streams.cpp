#include "streams.hpp"

#include <stdexcept>

namespace sandgate::gateway {

std::unique_ptr<boost::asio::ssl::context> make_tls_context(const std::filesystem::path& certfile,
                                                            const std::filesystem::path& keyfile) {
  namespace ssl = boost::asio::ssl;
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                   ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
  boost::system::error_code ec;
  ctx->use_certificate_chain_file(certfile.string(), ec);
  if (ec) throw std::runtime_error("--certfile " + certfile.string() + ": " + ec.message());
  ctx->use_private_key_file(keyfile.string(), ssl::context::pem, ec);
  if (ec) throw std::runtime_error("--keyfile " + keyfile.string() + ": " + ec.message());
  return ctx;
}

}  // namespace sandgate::gateway
