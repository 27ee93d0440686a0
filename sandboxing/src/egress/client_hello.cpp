#include "client_hello.hpp"

#include <cstdint>
#include <optional>

#include "byte_reader.hpp"

namespace sandgate::egress {
namespace {

constexpr unsigned char handshake_record = 22;
constexpr unsigned char client_hello_type = 1;
constexpr std::uint16_t server_name_extension = 0;
constexpr unsigned char host_name_entry = 0;
constexpr std::size_t max_record_bytes = (1u << 14) + 2048;  // TLSPlaintext, with room for old stacks

client_hello_scan malformed(std::string why) {
  return {client_hello_scan::kind::malformed, "", std::move(why)};
}

// The server name of a complete ClientHello body (after its 4-byte header).
client_hello_scan parse_hello(std::string_view body) {
  byte_reader r(body);
  if (!r.number(2) || !r.bytes(32)) return malformed("a ClientHello shorter than its fixed fields");
  const auto session = r.vector(1);
  const auto suites = r.vector(2);
  const auto compression = r.vector(1);
  if (!session || session->size() > 32 || !suites || suites->empty() || suites->size() % 2 != 0 ||
      !compression || compression->empty())
    return malformed("a ClientHello whose session, cipher suites or compression do not parse");
  if (r.left() == 0) return {client_hello_scan::kind::no_name, "", ""};
  const auto extensions = r.vector(2);
  if (!extensions || r.left() != 0) return malformed("a ClientHello whose extensions do not parse");
  byte_reader ext(*extensions);
  std::optional<std::string> name;
  bool seen = false;
  while (ext.left() > 0) {
    const auto type = ext.number(2);
    const auto data = ext.vector(2);
    if (!type || !data) return malformed("a ClientHello extension that does not parse");
    if (*type != server_name_extension) continue;
    if (seen) return malformed("a ClientHello with two server_name extensions");
    seen = true;
    byte_reader list(*data);
    const auto entries = list.vector(2);
    if (!entries || list.left() != 0 || entries->empty())
      return malformed("a server_name extension that does not parse");
    byte_reader entry(*entries);
    while (entry.left() > 0) {
      const auto kind = entry.number(1);
      const auto value = entry.vector(2);
      if (!kind || !value || value->empty()) return malformed("a server_name entry that does not parse");
      if (*kind != host_name_entry) continue;
      if (name) return malformed("a server_name extension with two host names");
      name = std::string(*value);
    }
  }
  if (!name) return {client_hello_scan::kind::no_name, "", ""};
  return {client_hello_scan::kind::named, std::move(*name), ""};
}

}  // namespace

client_hello_scan scan_client_hello(std::string_view bytes) {
  if (bytes.empty()) return {};
  // A TLS record starts 22, 3 (a handshake, protocol major version 3); anything else is not TLS.
  if (static_cast<unsigned char>(bytes[0]) != handshake_record)
    return {client_hello_scan::kind::not_tls, "", ""};
  if (bytes.size() < 2) return {};
  if (bytes[1] != 3) return {client_hello_scan::kind::not_tls, "", ""};
  if (bytes.size() > max_client_hello_bytes) bytes = bytes.substr(0, max_client_hello_bytes);
  // The handshake message may span records: gather their fragments in order.
  std::string handshake;
  byte_reader records(bytes);
  while (records.left() >= 5) {  // a record's header
    const auto type = records.number(1);
    const auto major = records.number(1);
    records.number(1);  // minor version: any
    const auto length = records.number(2);
    if (*type != handshake_record || *major != 3)
      return malformed("a record that is not a handshake inside the ClientHello");
    if (*length == 0 || *length > max_record_bytes)
      return malformed("a TLS record of " + std::to_string(*length) + " bytes");
    const auto fragment = records.bytes(*length);
    if (!fragment) break;
    handshake += *fragment;
    if (handshake.size() >= 4) {
      byte_reader head(handshake);
      const auto msg_type = head.number(1);
      const auto msg_length = head.number(3);
      if (*msg_type != client_hello_type)
        return malformed("a first handshake message that is not a ClientHello");
      if (*msg_length + 4 > max_client_hello_bytes) return malformed("a ClientHello larger than 64 KiB");
      if (handshake.size() >= *msg_length + 4)
        return parse_hello(std::string_view(handshake).substr(4, *msg_length));
    }
  }
  if (bytes.size() >= max_client_hello_bytes) return malformed("a ClientHello larger than 64 KiB");
  return {};
}

}  // namespace sandgate::egress
