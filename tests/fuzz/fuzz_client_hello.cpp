// libFuzzer target: the egress proxy's scan of a CONNECT tunnel's first bytes
// for a TLS ClientHello's server name (sandboxing/src/egress/client_hello).
// Whatever the bytes: no crash or overread, a name only when non-empty, a
// reason with every refusal, "more" only below the 64 KiB bound, a final
// answer that bytes sent after it cannot change, and no prefix decided
// otherwise than the whole. And the property the scan exists for: what it
// lets through, a lenient server reads the same way. The server modelled
// here takes what any of Go's crypto/tls, OpenSSL, BoringSSL and rustls take
// before a hello (alerts, change_cipher_spec, application data and heartbeat
// records, empty records, any record version, an SSLv2-format hello,
// handshake messages split over records as they like); where the scan says
// "not TLS" it must find no hello at all, and where the scan passes a hello,
// the first hello it finds must name the same server.

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "byte_reader.hpp"
#include "client_hello.hpp"

using sandgate::egress::byte_reader;
using sandgate::egress::client_hello_scan;
using sandgate::egress::max_client_hello_bytes;
using sandgate::egress::scan_client_hello;

namespace {

struct lenient_hello {
  bool found = false;
  std::string server_name;  // the first host_name entry, "" without one
};

// The first host_name in a ClientHello body, as a lenient server picks it.
std::string first_host_name(std::string_view body) {
  byte_reader r(body);
  if (!r.bytes(2 + 32) || !r.vector(1) || !r.vector(2) || !r.vector(1)) return "";
  const auto extensions = r.vector(2);
  if (!extensions) return "";
  byte_reader ext(*extensions);
  while (ext.left() > 0) {
    const auto type = ext.number(2);
    const auto data = ext.vector(2);
    if (!type || !data) return "";
    if (*type != 0) continue;
    byte_reader list(*data);
    const auto entries = list.vector(2);
    if (!entries) return "";
    byte_reader entry(*entries);
    while (entry.left() > 0) {
      const auto kind = entry.number(1);
      const auto value = entry.vector(2);
      if (!kind || !value) return "";
      if (*kind == 0) return std::string(*value);
    }
  }
  return "";
}

// The first ClientHello a lenient server would reach in `bytes`.
lenient_hello lenient_first_hello(std::string_view bytes) {
  if (bytes.size() >= 3 && (static_cast<unsigned char>(bytes[0]) & 0x80) && bytes[2] == 1)
    return {true, ""};  // SSLv2 format: no extensions, no name
  std::string handshake;
  byte_reader records(bytes);
  while (records.left() >= 5) {
    const auto type = records.number(1);
    records.number(2);  // any version
    const auto fragment = records.vector(2);
    if (!fragment) break;
    if (*type < 20 || *type > 26) break;  // no stack reads past a type it does not know
    if (*type != 22) continue;            // alerts, change_cipher_spec, data, heartbeats: skipped
    handshake += *fragment;
    for (;;) {  // whole handshake messages, in order
      byte_reader head(handshake);
      const auto msg_type = head.number(1);
      const auto msg_length = head.number(3);
      if (!msg_type || handshake.size() < *msg_length + 4) break;
      if (*msg_type == 1) return {true, first_host_name(std::string_view(handshake).substr(4, *msg_length))};
      handshake.erase(0, *msg_length + 4);
    }
  }
  return {};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto scan = scan_client_hello(bytes);
  using kind = client_hello_scan::kind;
  if (scan.what == kind::named && scan.server_name.empty()) std::abort();
  if (scan.what != kind::named && !scan.server_name.empty()) std::abort();
  if (scan.what == kind::refused && scan.error.empty()) std::abort();
  if (scan.what == kind::need_more && size >= max_client_hello_bytes) std::abort();
  if (scan.what != kind::need_more) {
    const auto again = scan_client_hello(std::string(bytes) + "\x17\x03\x03\x00\x01z");
    if (again.what != scan.what || again.server_name != scan.server_name) std::abort();
  }
  // The bytes arriving in pieces: a prefix is undecided or decided as the whole.
  for (const std::size_t cut : {std::size_t{1}, size / 3, size / 2, size - (size > 0 ? 1 : 0)}) {
    if (cut == 0 || cut >= size) continue;
    const auto part = scan_client_hello(bytes.substr(0, cut));
    if (part.what != kind::need_more && (part.what != scan.what || part.server_name != scan.server_name))
      std::abort();
  }
  const auto lenient = lenient_first_hello(bytes);
  if (scan.what == kind::not_tls && lenient.found) std::abort();
  if (scan.what == kind::named && lenient.server_name != scan.server_name) std::abort();
  if (scan.what == kind::no_name && (!lenient.found || !lenient.server_name.empty())) std::abort();
  return 0;
}
