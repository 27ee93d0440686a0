// What the first bytes a client sends into a CONNECT tunnel say about where
// it means to go: the server name (SNI) of a TLS ClientHello, read without
// terminating TLS (no interception: only the cleartext hello is looked at).
// A tunnel to an allowed name whose hello names another server is how a
// shared address (a CDN, a virtual host) would be used to reach a host the
// policy does not allow.
//
// The bytes are read as the most lenient TLS servers read a connection's
// first bytes, so that no server can find a hello the scan did not check.
// Go's crypto/tls takes a first record of type alert or handshake with any
// version below 16.0 and drops warning alerts before the hello; OpenSSL and
// BoringSSL drop warning alerts and empty records and take an SSLv2-format
// hello; rustls takes any content type it knows. So a first byte that is a
// TLS content type (20 to 24), or the SSLv2 form, means TLS, and then only
// one clean ClientHello passes: handshake records of version 3.x, none
// empty, none larger than 2^14, nothing else before or between them, and
// nothing after the hello in its last record. Anything else TLS-like is
// refused, not let through: no server stack reads a hello behind such bytes
// without the scan having read it first.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sandgate::egress {

// The most of a ClientHello looked at (several TLS records may carry it).
inline constexpr std::size_t max_client_hello_bytes = 64 * 1024;

struct client_hello_scan {
  enum class kind {
    need_more,  // may still become a clean ClientHello: not complete yet
    not_tls,    // no TLS server reads these bytes as TLS: another protocol
    no_name,    // a clean, complete hello without a server name
    named,      // a clean, complete hello naming `server_name`
    refused,    // TLS-like, but not one clean ClientHello (or longer than the bound)
  };
  kind what = kind::need_more;
  std::string server_name;  // as sent (named only)
  std::string error;        // why (refused only)
};

// `bytes`: everything the client has sent so far, from its first byte. A
// verdict other than need_more does not change with bytes sent after it.
[[nodiscard]] client_hello_scan scan_client_hello(std::string_view bytes);

}  // namespace sandgate::egress
