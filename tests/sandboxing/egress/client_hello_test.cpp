// The server name of a TLS ClientHello, from hellos OpenSSL itself writes
// (with and without a name, whole, cut short, split across records) and from
// hand-made ones that are malformed; and the records lenient server stacks
// read before or around a hello, each refused.
#include "client_hello.hpp"

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sandgate::egress {
namespace {

using kind = client_hello_scan::kind;

// The first flight of a real TLS client (OpenSSL's defaults), naming `name` unless empty.
std::string openssl_hello(const std::string& name) {
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl.get(), in, out);
  if (!name.empty())  // SSL_set_tlsext_host_name, without its C cast
    SSL_ctrl(ssl.get(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
             const_cast<char*>(name.c_str()));
  EXPECT_EQ(SSL_connect(ssl.get()), -1);  // wants the server's answer
  char* data = nullptr;
  const long n = BIO_ctrl(out, BIO_CTRL_INFO, 0, static_cast<void*>(&data));  // BIO_get_mem_data
  return {data, static_cast<std::size_t>(n)};
}

// The same handshake bytes, re-framed as records of at most `size` bytes.
std::string reframed(const std::string& records, std::size_t size) {
  std::string handshake, out;
  for (std::size_t at = 0; at + 5 <= records.size();) {
    const std::size_t len =
        (static_cast<unsigned char>(records[at + 3]) << 8) | static_cast<unsigned char>(records[at + 4]);
    handshake += records.substr(at + 5, len);
    at += 5 + len;
  }
  for (std::size_t at = 0; at < handshake.size(); at += size) {
    const auto part = handshake.substr(at, size);
    out += std::string{22, 3, 1, static_cast<char>(part.size() >> 8), static_cast<char>(part.size() & 0xff)} +
           part;
  }
  return out;
}

std::string u16(std::size_t v) {
  return {static_cast<char>(v >> 8), static_cast<char>(v & 0xff)};
}

// A minimal ClientHello with the given extensions block, in one record.
std::string hand_hello(const std::string& extensions) {
  std::string body = u16(0x0303) + std::string(32, 'r') + std::string(1, '\0') + u16(2) + u16(0x1301) +
                     std::string{1, 0} + u16(extensions.size()) + extensions;
  const std::string msg = std::string{1, 0} + u16(body.size()) + body;
  return std::string{22, 3, 1} + u16(msg.size()) + msg;
}

std::string sni_extension(const std::string& entries) {
  return u16(0) + u16(entries.size() + 2) + u16(entries.size()) + entries;
}

std::string host_entry(const std::string& name) {
  return std::string(1, '\0') + u16(name.size()) + name;
}

TEST(ClientHello, ANamedHelloFromOpenSsl) {
  const auto hello = openssl_hello("files.example.org");
  ASSERT_GT(hello.size(), 100u);
  const auto scan = scan_client_hello(hello);
  EXPECT_EQ(scan.what, kind::named) << scan.error;
  EXPECT_EQ(scan.server_name, "files.example.org");
}

TEST(ClientHello, AHelloWithoutANameIsComplete) {
  const auto scan = scan_client_hello(openssl_hello(""));
  EXPECT_EQ(scan.what, kind::no_name) << scan.error;
  EXPECT_EQ(scan.server_name, "");
}

TEST(ClientHello, EveryShorterPrefixNeedsMore) {
  const auto hello = openssl_hello("files.example.org");
  for (std::size_t n = 0; n < hello.size(); ++n)
    ASSERT_EQ(scan_client_hello(hello.substr(0, n)).what, kind::need_more) << n << " bytes";
}

TEST(ClientHello, AHelloSplitAcrossRecordsIsReadWhole) {
  const auto split = reframed(openssl_hello("split.example.org"), 40);
  const auto scan = scan_client_hello(split);
  EXPECT_EQ(scan.what, kind::named) << scan.error;
  EXPECT_EQ(scan.server_name, "split.example.org");
  EXPECT_EQ(scan_client_hello(split.substr(0, split.size() - 1)).what, kind::need_more);
}

TEST(ClientHello, BytesAfterTheHelloDoNotMatter) {
  const auto scan = scan_client_hello(openssl_hello("a.example.org") + "\x17\x03\x03garbage");
  EXPECT_EQ(scan.what, kind::named);
  EXPECT_EQ(scan.server_name, "a.example.org");
}

TEST(ClientHello, OtherProtocolsAreNotTls) {
  EXPECT_EQ(scan_client_hello("SSH-2.0-OpenSSH_9.2\r\n").what, kind::not_tls);
  EXPECT_EQ(scan_client_hello("GET / HTTP/1.1\r\n").what, kind::not_tls);
  EXPECT_EQ(scan_client_hello(std::string{0x13}).what, kind::not_tls);             // below change_cipher_spec
  EXPECT_EQ(scan_client_hello(std::string{0x1b}).what, kind::not_tls);             // above every record type
  EXPECT_EQ(scan_client_hello(std::string{'\x80', 0x10, 4}).what, kind::not_tls);  // high bit, not a v2 hello
  EXPECT_EQ(scan_client_hello(std::string{22}).what, kind::need_more);
  EXPECT_EQ(scan_client_hello(std::string{'\x80', 0x10}).what, kind::need_more);
}

// What Go's crypto/tls, OpenSSL, BoringSSL or rustls read before (or around)
// a ClientHello, followed by a clean hello naming another server: refused,
// whatever came first, never passed as "not TLS" or as the later hello.
TEST(ClientHello, RecordsALenientServerSkipsBeforeAHelloAreRefused) {
  const auto hello = openssl_hello("other.test");
  const std::vector<std::pair<std::string, std::string>> before = {
      {"a warning alert", std::string{21, 3, 1, 0, 2, 1, 0x5a}},
      {"a close_notify alert", std::string{21, 3, 3, 0, 2, 1, 0}},
      {"a change_cipher_spec", std::string{20, 3, 3, 0, 1, 1}},
      {"application data", std::string{23, 3, 3, 0, 1, 'x'}},
      {"a heartbeat", std::string{24, 3, 3, 0, 3, 1, 0, 0}},
      {"an empty handshake record", std::string{22, 3, 1, 0, 0}},
      {"an alert of version 0.1", std::string{21, 0, 1, 0, 2, 1, 0x5a}},
  };
  for (const auto& [what, bytes] : before) {
    const auto scan = scan_client_hello(bytes + hello);
    EXPECT_EQ(scan.what, kind::refused) << what;
    EXPECT_FALSE(scan.error.empty()) << what;
    EXPECT_EQ(scan.server_name, "") << what;
  }
}

TEST(ClientHello, OddRecordVersionsAreRefused) {
  // The hello itself in a record of version major 0 (Go reads it) or 4.
  for (const char major : {0, 1, 4, 15}) {
    auto hello = openssl_hello("other.test");
    hello[1] = major;
    const auto scan = scan_client_hello(hello);
    EXPECT_EQ(scan.what, kind::refused) << int(major);
    EXPECT_EQ(scan.server_name, "") << int(major);
  }
  // A hello body of version 2.0.
  auto body_version = hand_hello(sni_extension(host_entry("x.test")));
  body_version[9] = 2;
  EXPECT_EQ(scan_client_hello(body_version).what, kind::refused);
}

TEST(ClientHello, AnSslv2HelloIsRefused) {
  // msg_length 0x8031, type 1 (CLIENT-HELLO), version 3.1, then its lists.
  const std::string v2 = std::string{'\x80', 0x2e, 1, 3, 1, 0, 21, 0, 0, 0, 16} + std::string(21 + 16, 'a');
  const auto scan = scan_client_hello(v2);
  EXPECT_EQ(scan.what, kind::refused);
  EXPECT_NE(scan.error.find("SSLv2"), std::string::npos) << scan.error;
}

TEST(ClientHello, AHelloInOneByteRecordsIsReadWhole) {
  const auto split = reframed(openssl_hello("bytewise.example.org"), 1);
  const auto scan = scan_client_hello(split);
  EXPECT_EQ(scan.what, kind::named) << scan.error;
  EXPECT_EQ(scan.server_name, "bytewise.example.org");
}

TEST(ClientHello, RecordsInsideOrAfterTheHelloInItsRecordAreRefused) {
  const auto split = reframed(openssl_hello("c.test"), 40);
  // A warning alert between two fragments of the hello.
  const auto alert = std::string{21, 3, 3, 0, 2, 1, 0x5a};
  EXPECT_EQ(scan_client_hello(split.substr(0, 45) + alert + split.substr(45)).what, kind::refused);
  // An empty handshake record between two fragments.
  EXPECT_EQ(scan_client_hello(split.substr(0, 45) + std::string{22, 3, 3, 0, 0} + split.substr(45)).what,
            kind::refused);
  // A second ClientHello behind the first, in the first one's record.
  const auto one = hand_hello(sni_extension(host_entry("a.test")));
  const auto two = hand_hello(sni_extension(host_entry("b.test")));
  const auto both =
      std::string{22, 3, 1} + u16(one.size() - 5 + two.size() - 5) + one.substr(5) + two.substr(5);
  EXPECT_EQ(scan_client_hello(both).what, kind::refused);
  // A record larger than TLS allows a plaintext to be (2^14).
  EXPECT_EQ(scan_client_hello(std::string{22, 3, 1, 0x40, 1}).what, kind::refused);
}

TEST(ClientHello, HandMadeHellosParse) {
  EXPECT_EQ(scan_client_hello(hand_hello(sni_extension(host_entry("x.test")))).server_name, "x.test");
  // Another extension first, and an entry of an unknown name type before the host name.
  const auto other = u16(10) + u16(2) + u16(0x001d);
  const auto odd_entry = std::string(1, '\x07') + u16(3) + "abc";
  const auto scan = scan_client_hello(hand_hello(other + sni_extension(odd_entry + host_entry("y.test"))));
  EXPECT_EQ(scan.what, kind::named) << scan.error;
  EXPECT_EQ(scan.server_name, "y.test");
  EXPECT_EQ(scan_client_hello(hand_hello("")).what, kind::no_name);
}

TEST(ClientHello, MalformedHellosAreRefused) {
  const auto twice = sni_extension(host_entry("a.test")) + sni_extension(host_entry("b.test"));
  EXPECT_EQ(scan_client_hello(hand_hello(twice)).what, kind::refused);
  EXPECT_EQ(scan_client_hello(hand_hello(sni_extension(host_entry("a.test") + host_entry("b.test")))).what,
            kind::refused);
  EXPECT_EQ(scan_client_hello(hand_hello(sni_extension(host_entry("")))).what, kind::refused);
  // An extension whose length runs past the block.
  EXPECT_EQ(scan_client_hello(hand_hello(u16(0) + u16(50) + "short")).what, kind::refused);
  // A first handshake message that is not a ClientHello (a ServerHello, type 2).
  auto server_hello = hand_hello("");
  server_hello[5] = 2;
  EXPECT_EQ(scan_client_hello(server_hello).what, kind::refused);
  // A record of another type in the middle of the hello.
  auto split = reframed(openssl_hello("c.test"), 40);
  split[45] = 23;
  EXPECT_EQ(scan_client_hello(split).what, kind::refused);
  // Empty and oversized records.
  EXPECT_EQ(scan_client_hello(std::string{22, 3, 1, 0, 0}).what, kind::refused);
  EXPECT_EQ(scan_client_hello(std::string{22, 3, 1, '\x7f', '\x7f'}).what, kind::refused);
}

TEST(ClientHello, AHelloLargerThanTheBoundIsRefused) {
  // A ClientHello message announcing 1 MiB, in full-sized records.
  std::string records;
  const std::string head = std::string{1, '\x10', 0, 0};  // type 1, length 0x100000
  records += std::string{22, 3, 1} + u16(4) + head;
  EXPECT_EQ(scan_client_hello(records).what, kind::refused);
  // One that fits the bound, but not yet all there: more is needed.
  const std::string small = std::string{1, 0, '\x40', 0};  // 16 KiB
  EXPECT_EQ(scan_client_hello(std::string{22, 3, 1} + u16(4) + small).what, kind::need_more);
}

}  // namespace
}  // namespace sandgate::egress
