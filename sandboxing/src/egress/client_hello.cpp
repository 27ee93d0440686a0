#include "client_hello.hpp"

#include <cstdint>
#include <optional>

#include "byte_reader.hpp"

namespace sandgate::egress {
namespace {

constexpr unsigned char change_cipher_spec_record = 20;
constexpr unsigned char alert_record = 21;
constexpr unsigned char handshake_record = 22;
constexpr unsigned char last_tls_record_type = 26;  // up to DTLS's ack: any type a stack may know
constexpr unsigned char client_hello_type = 1;
constexpr unsigned char sslv2_client_hello_type = 1;
constexpr std::uint16_t server_name_extension = 0;
constexpr unsigned char host_name_entry = 0;
constexpr std::size_t max_record_bytes = 1u << 14;  // TLSPlaintext.length, RFC 8446 5.1

client_hello_scan refused(std::string why) {
  return {client_hello_scan::kind::refused, "", std::move(why)};
}

std::string record_name(unsigned type) {
  switch (type) {
    case change_cipher_spec_record:
      return "a change_cipher_spec record";
    case alert_record:
      return "an alert record";
    case 23:
      return "an application_data record";
    case 24:
      return "a heartbeat record";
    default:
      return "a record of type " + std::to_string(type);
  }
}

// The server name of a complete ClientHello body (after its 4-byte header).
client_hello_scan parse_hello(std::string_view body) {
  byte_reader r(body);
  const auto version = r.number(2);
  if (!version || !r.bytes(32)) return refused("a ClientHello shorter than its fixed fields");
  if (*version >> 8 != 3) return refused("a ClientHello of version " + std::to_string(*version >> 8) + ".x");
  const auto session = r.vector(1);
  const auto suites = r.vector(2);
  const auto compression = r.vector(1);
  if (!session || session->size() > 32 || !suites || suites->empty() || suites->size() % 2 != 0 ||
      !compression || compression->empty())
    return refused("a ClientHello whose session, cipher suites or compression do not parse");
  if (r.left() == 0) return {client_hello_scan::kind::no_name, "", ""};
  const auto extensions = r.vector(2);
  if (!extensions || r.left() != 0) return refused("a ClientHello whose extensions do not parse");
  byte_reader ext(*extensions);
  std::optional<std::string> name;
  bool seen = false;
  while (ext.left() > 0) {
    const auto type = ext.number(2);
    const auto data = ext.vector(2);
    if (!type || !data) return refused("a ClientHello extension that does not parse");
    if (*type != server_name_extension) continue;
    if (seen) return refused("a ClientHello with two server_name extensions");
    seen = true;
    byte_reader list(*data);
    const auto entries = list.vector(2);
    if (!entries || list.left() != 0 || entries->empty())
      return refused("a server_name extension that does not parse");
    byte_reader entry(*entries);
    while (entry.left() > 0) {
      const auto kind = entry.number(1);
      const auto value = entry.vector(2);
      if (!kind || !value || value->empty()) return refused("a server_name entry that does not parse");
      if (*kind != host_name_entry) continue;
      if (name) return refused("a server_name extension with two host names");
      name = std::string(*value);
    }
  }
  if (!name) return {client_hello_scan::kind::no_name, "", ""};
  return {client_hello_scan::kind::named, std::move(*name), ""};
}

// The first bytes when they begin with a handshake record: one ClientHello in
// handshake records and nothing else until it ends.
client_hello_scan scan_records(std::string_view bytes) {
  std::string handshake;  // the fragments so far, in order
  byte_reader records(bytes);
  while (records.left() >= 5) {  // a record's header
    const auto type = records.number(1);
    const auto version = records.number(2);
    const auto length = records.number(2);
    if (*type != handshake_record) return refused(record_name(*type) + " inside the ClientHello");
    if (*version >> 8 != 3) return refused("a TLS record of version " + std::to_string(*version >> 8) + ".x");
    if (*length == 0) return refused("an empty TLS record before the ClientHello ends");
    if (*length > max_record_bytes) return refused("a TLS record of " + std::to_string(*length) + " bytes");
    const auto fragment = records.bytes(*length);
    if (!fragment) return {};  // the record is not all there yet
    handshake += *fragment;
    if (handshake.size() < 4) continue;
    byte_reader head(handshake);
    const auto msg_type = head.number(1);
    const auto msg_length = head.number(3);
    if (*msg_type != client_hello_type) return refused("a first handshake message that is not a ClientHello");
    if (*msg_length + 4 > max_client_hello_bytes) return refused("a ClientHello larger than 64 KiB");
    if (handshake.size() < *msg_length + 4) continue;
    // Another message behind the hello in its record would be read before the server answers.
    if (handshake.size() > *msg_length + 4) return refused("bytes after the ClientHello in its record");
    return parse_hello(std::string_view(handshake).substr(4, *msg_length));
  }
  if (bytes.size() >= max_client_hello_bytes) return refused("a ClientHello larger than 64 KiB");
  return {};
}

}  // namespace

client_hello_scan scan_client_hello(std::string_view bytes) {
  if (bytes.empty()) return {};
  const auto first = static_cast<unsigned char>(bytes[0]);
  if (first & 0x80) {  // an SSLv2 record header (two bytes of length, high bit set), if its type says hello
    if (bytes.size() < 3) return {};
    if (static_cast<unsigned char>(bytes[2]) == sslv2_client_hello_type)
      return refused("an SSLv2-format ClientHello (it names no server, and no current client sends one)");
    return {client_hello_scan::kind::not_tls, "", ""};
  }
  if (first < change_cipher_spec_record || first > last_tls_record_type)
    return {client_hello_scan::kind::not_tls, "", ""};
  if (first != handshake_record) return refused(record_name(first) + " before the ClientHello");
  if (bytes.size() > max_client_hello_bytes) bytes = bytes.substr(0, max_client_hello_bytes);
  return scan_records(bytes);
}

}  // namespace sandgate::egress
