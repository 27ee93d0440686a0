#include "dns_message.hpp"

#include <gtest/gtest.h>

#include <string>

namespace dns = sandgate::egress::dns;
namespace sb = sandgate::sandboxing;

namespace {

std::string raw(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes)
    out.push_back(static_cast<char>(b));
  return out;
}

std::string u16(unsigned v) {
  return {static_cast<char>(v >> 8), static_cast<char>(v & 0xff)};
}

std::string name(const std::string& dotted) {
  std::string out;
  std::size_t start = 0;
  while (start < dotted.size()) {
    const auto end = std::min(dotted.find('.', start), dotted.size());
    out.push_back(static_cast<char>(end - start));
    out += dotted.substr(start, end - start);
    start = end + 1;
  }
  return out + std::string(1, '\0');
}

std::string record(const std::string& owner_wire, unsigned type, const std::string& data, unsigned cls = 1) {
  return owner_wire + u16(type) + u16(cls) + u16(0) + u16(30) + u16(static_cast<unsigned>(data.size())) +
         data;
}

// A response to (id, qname, qtype) with `answers` records already encoded.
std::string response(unsigned id, const std::string& qname, unsigned qtype, const std::string& answers,
                     unsigned count, unsigned flags = 0x8180) {
  return u16(id) + u16(flags) + u16(1) + u16(count) + u16(0) + u16(0) + name(qname) + u16(qtype) + u16(1) +
         answers;
}

const std::string ptr_question = raw({0xc0, 0x0c});  // the question's name, at offset 12

sb::ip_address v4(const char* text) {
  return *sb::parse_ip(text);
}

}  // namespace

TEST(dns_message, query_is_a_recursive_question_with_an_opt_record) {
  const auto q = dns::encode_query(0x1234, "Flip.Test.", dns::record_type::a);
  ASSERT_TRUE(q);
  const std::string expected = u16(0x1234) + u16(0x0100) + u16(1) + u16(0) + u16(0) + u16(1) +
                               name("flip.test") + u16(1) + u16(1) + std::string(1, '\0') + u16(41) +
                               u16(1232) + u16(0) + u16(0) + u16(0);
  EXPECT_EQ(*q, expected);
  EXPECT_EQ(dns::message_id(*q), 0x1234);
  EXPECT_FALSE(dns::encode_query(1, "a b.test", dns::record_type::a));
  EXPECT_FALSE(dns::encode_query(1, "*.test", dns::record_type::a));
  EXPECT_FALSE(dns::encode_query(1, "", dns::record_type::a));
  EXPECT_FALSE(dns::encode_query(1, std::string(64, 'a') + ".test", dns::record_type::a));
}

TEST(dns_message, an_answer_gives_its_addresses_in_order_without_duplicates) {
  const std::string answers = record(ptr_question, 1, raw({0x7f, 0x00, 0x00, 0x01})) +
                              record(ptr_question, 1, raw({0xcb, 0x00, 0x71, 0x02})) +
                              record(ptr_question, 1, raw({0x7f, 0x00, 0x00, 0x01}));
  const auto a =
      dns::parse_answer(response(7, "flip.test", 1, answers, 3), 7, "flip.test", dns::record_type::a);
  EXPECT_EQ(a.error, "");
  ASSERT_EQ(a.addresses.size(), 2u);
  EXPECT_EQ(a.addresses[0], v4("127.0.0.1"));
  EXPECT_EQ(a.addresses[1], v4("203.0.113.2"));
}

TEST(dns_message, aaaa_records_and_names_in_other_cases) {
  const std::string six(std::string(15, '\0') + raw({0x01}));
  const auto a = dns::parse_answer(response(9, "FLIP.test", 28, record(ptr_question, 28, six), 1), 9,
                                   "flip.TEST", dns::record_type::aaaa);
  EXPECT_EQ(a.error, "");
  ASSERT_EQ(a.addresses.size(), 1u);
  EXPECT_EQ(a.addresses[0], *sb::parse_ip("::1"));
}

TEST(dns_message, cnames_are_followed_from_the_name_asked) {
  // flip.test -> real.test (its A counts); other.test's A does not.
  const std::string answers = record(ptr_question, 5, name("real.test")) +
                              record(name("other.test"), 1, raw({0x0a, 0x00, 0x00, 0x01})) +
                              record(name("real.test"), 1, raw({0xc6, 0x33, 0x64, 0x07}));
  const auto a =
      dns::parse_answer(response(3, "flip.test", 1, answers, 3), 3, "flip.test", dns::record_type::a);
  EXPECT_EQ(a.error, "");
  ASSERT_EQ(a.addresses.size(), 1u);
  EXPECT_EQ(a.addresses[0], v4("198.51.100.7"));
  const std::string loop =
      record(ptr_question, 5, name("b.test")) + record(name("b.test"), 5, name("flip.test"));
  EXPECT_EQ(
      dns::parse_answer(response(3, "flip.test", 1, loop, 2), 3, "flip.test", dns::record_type::a).error,
      "a CNAME loop");
}

TEST(dns_message, no_records_is_an_empty_answer_not_an_error) {
  const auto a =
      dns::parse_answer(response(5, "flip.test", 28, "", 0), 5, "flip.test", dns::record_type::aaaa);
  EXPECT_EQ(a.error, "");
  EXPECT_TRUE(a.addresses.empty());
  // Records of another class are ignored.
  const auto chaos = dns::parse_answer(
      response(5, "flip.test", 1, record(ptr_question, 1, raw({0x01, 0x02, 0x03, 0x04}), 3), 1), 5,
      "flip.test", dns::record_type::a);
  EXPECT_TRUE(chaos.addresses.empty());
}

TEST(dns_message, each_unusable_message_has_its_own_error) {
  const std::string ok = record(ptr_question, 1, raw({0x7f, 0x00, 0x00, 0x01}));
  struct bad_case {
    std::string message;
    std::string error;
  };
  const bad_case cases[] = {
      {raw({0x00, 0x07, 0x81}), "a DNS message shorter than its header"},
      {response(8, "flip.test", 1, ok, 1), "not the response to the query"},
      {response(7, "flip.test", 1, ok, 1, 0x0100), "not the response to the query"},
      {response(7, "evil.test", 1, ok, 1), "a DNS response to another question (evil.test)"},
      {response(7, "flip.test", 28, ok, 1), "a DNS response to another question (flip.test)"},
      {response(7, "flip.test", 1, "", 0, 0x8183), "no such name (NXDOMAIN)"},
      {response(7, "flip.test", 1, "", 0, 0x8182), "the DNS server failed (SERVFAIL)"},
      {response(7, "flip.test", 1, "", 0, 0x8185), "the DNS server refused the query (REFUSED)"},
      {response(7, "flip.test", 1, "", 0, 0x8184), "the DNS server answered with code 4"},
      {response(7, "flip.test", 1, "", 0, 0x8380), "the DNS answer was truncated"},
      {response(7, "flip.test", 1, ok, 2), "a malformed record in the DNS answer"},
      {response(7, "flip.test", 1, ok.substr(0, ok.size() - 1), 1), "a DNS record longer than the message"},
      {response(7, "flip.test", 1, record(ptr_question, 1, raw({0x7f, 0x00, 0x01})), 1),
       "an address record of 3 bytes"},
      // A pointer forwards (to itself): refused, never followed.
      {response(7, "flip.test", 1, record(raw({0xc0, 0x1b}), 1, raw({0x7f, 0x00, 0x00, 0x01})), 1),
       "a malformed record in the DNS answer"},
      {response(7, "flip.test", 1,
                record(ptr_question, 5,
                       "\x03"
                       "abc"),
                1),
       "a malformed CNAME in the DNS answer"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.error);
    const auto a = dns::parse_answer(c.message, 7, "flip.test", dns::record_type::a);
    EXPECT_EQ(a.error, c.error);
    EXPECT_TRUE(a.addresses.empty());
  }
}

TEST(dns_message, truncated_with_addresses_keeps_them) {
  const auto a = dns::parse_answer(
      response(7, "flip.test", 1, record(ptr_question, 1, raw({0x7f, 0x00, 0x00, 0x01})), 1, 0x8380), 7,
      "flip.test", dns::record_type::a);
  EXPECT_EQ(a.error, "");
  EXPECT_EQ(a.addresses.size(), 1u);
}
