#include <gateway/ids.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <regex>
#include <set>
#include <string>

namespace sandgate::gateway {
namespace {

// RFC 9562 text form, version 8, variant 10xx.
const std::regex v8_re("^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");

std::string hex4(std::uint16_t n) {
  char buf[5];
  std::snprintf(buf, sizeof buf, "%04x", n);
  return buf;
}

TEST(ids, new_id_is_a_lowercase_version_8_uuid) {
  for (int i = 0; i < 1000; ++i) {
    const auto id = new_id(0);
    ASSERT_TRUE(std::regex_match(id, v8_re)) << id;
    ASSERT_TRUE(is_uuid(id));
  }
}

TEST(ids, node_is_in_the_first_16_bits) {
  for (std::uint16_t node : {0, 1, 0x00ff, 0x0100, 0x1234, 0xabcd, 0xffff}) {
    SCOPED_TRACE(node);
    const auto id = new_id(node);
    EXPECT_TRUE(std::regex_match(id, v8_re)) << id;
    EXPECT_EQ(id.substr(0, 4), hex4(node));
    EXPECT_EQ(id_node(id), std::optional<std::uint16_t>(node));
  }
}

TEST(ids, ids_are_unique) {
  std::set<std::string> seen;
  for (int i = 0; i < 20000; ++i)
    ASSERT_TRUE(seen.insert(new_id(3)).second);
}

TEST(ids, every_free_hex_digit_varies) {
  // Over many ids, each digit outside the node, version and variant takes
  // many values: the rest of the id is random, not a counter or a clock.
  std::array<std::set<char>, 36> values;
  for (int i = 0; i < 2000; ++i) {
    const auto id = new_id(0x4242);
    for (std::size_t p = 0; p < id.size(); ++p)
      values[p].insert(id[p]);
  }
  for (std::size_t p = 0; p < 36; ++p) {
    SCOPED_TRACE(p);
    if (p < 4 || p == 8 || p == 13 || p == 18 || p == 23 || p == 14) {
      EXPECT_EQ(values[p].size(), 1u);  // node, dashes, version
    } else if (p == 19) {
      EXPECT_EQ(values[p], (std::set<char>{'8', '9', 'a', 'b'}));  // variant
    } else {
      EXPECT_EQ(values[p].size(), 16u);
    }
  }
}

TEST(ids, is_uuid_accepts_canonical_text_only) {
  EXPECT_TRUE(is_uuid("00000000-0000-0000-0000-000000000000"));
  EXPECT_TRUE(is_uuid("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"));
  EXPECT_TRUE(is_uuid("0A1B2C3D-4E5F-4A6B-8C7D-9E0F1A2B3C4D"));
  for (const char* bad : {"", "0a1b2c3d4e5f4a6b8c7d9e0f1a2b3c4d", "{0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d}",
                          "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4", "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d0",
                          "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4g", "0a1b2c3d4-e5f-4a6b-8c7d-9e0f1a2b3c4d",
                          "0a1b2c3d-4e5f-4a6b-8c7d_9e0f1a2b3c4d", "../../../../../../../../etc/passwd12",
                          "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4\n"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(is_uuid(bad));
    EXPECT_FALSE(id_node(bad).has_value());
  }
  EXPECT_FALSE(is_uuid(std::string_view("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4\0", 36)));
}

TEST(ids, id_node_reads_upper_and_lower_case) {
  EXPECT_EQ(id_node("ABCD2c3d-4e5f-8a6b-8c7d-9e0f1a2b3c4d"), std::optional<std::uint16_t>(0xabcd));
  EXPECT_EQ(id_node("ffff2c3d-4e5f-8a6b-8c7d-9e0f1a2b3c4d"), std::optional<std::uint16_t>(0xffff));
}

TEST(ids, random_hex_has_the_asked_length_and_varies) {
  for (std::size_t n : {1u, 16u, 24u, 32u}) {
    const auto a = random_hex(n), b = random_hex(n);
    EXPECT_EQ(a.size(), 2 * n);
    EXPECT_TRUE(std::regex_match(a, std::regex("^[0-9a-f]+$"))) << a;
    if (n >= 16) {
      EXPECT_NE(a, b);
    }
  }
  EXPECT_EQ(random_hex(0), "");
}

}  // namespace
}  // namespace sandgate::gateway
