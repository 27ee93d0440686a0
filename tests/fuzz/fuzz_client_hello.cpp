// libFuzzer target: the egress proxy's scan of a CONNECT tunnel's first bytes
// for a TLS ClientHello's server name (sandboxing/src/egress/client_hello).
// Whatever the bytes: no crash or overread, a name only when non-empty, a
// reason with every refusal, "more" only below the 64 KiB bound, and a final
// answer that bytes sent after it cannot change.

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "client_hello.hpp"

using sandgate::egress::client_hello_scan;
using sandgate::egress::max_client_hello_bytes;
using sandgate::egress::scan_client_hello;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto scan = scan_client_hello(bytes);
  using kind = client_hello_scan::kind;
  if (scan.what == kind::named && scan.server_name.empty()) std::abort();
  if (scan.what != kind::named && !scan.server_name.empty()) std::abort();
  if (scan.what == kind::malformed && scan.error.empty()) std::abort();
  if (scan.what == kind::need_more && size >= max_client_hello_bytes) std::abort();
  if (scan.what != kind::need_more) {
    const auto again = scan_client_hello(std::string(bytes) + "\x17\x03\x03\x00\x01z");
    if (again.what != scan.what || again.server_name != scan.server_name) std::abort();
  }
  return 0;
}
