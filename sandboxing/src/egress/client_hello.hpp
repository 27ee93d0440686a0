// What the first bytes a client sends into a CONNECT tunnel say about where
// it means to go: the server name (SNI) of a TLS ClientHello, read without
// terminating TLS (no interception: only the cleartext hello is looked at).
// A tunnel to an allowed name whose hello names another server is how a
// shared address (a CDN, a virtual host) would be used to reach a host the
// policy does not allow.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sandgate::egress {

// The most of a ClientHello looked at (several TLS records may carry it).
inline constexpr std::size_t max_client_hello_bytes = 64 * 1024;

struct client_hello_scan {
  enum class kind {
    need_more,  // a TLS hello, not complete yet
    not_tls,    // some other protocol: nothing to check
    no_name,    // a complete hello without a server name
    named,      // a complete hello naming `server_name`
    malformed,  // TLS, but not a well-formed ClientHello (or longer than the bound)
  };
  kind what = kind::need_more;
  std::string server_name;  // as sent (named only)
  std::string error;        // malformed only
};

// `bytes`: everything the client has sent so far, from its first byte.
[[nodiscard]] client_hello_scan scan_client_hello(std::string_view bytes);

}  // namespace sandgate::egress
