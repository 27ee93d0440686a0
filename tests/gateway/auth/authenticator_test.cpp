#include "auth/authenticator.hpp"

#include <gtest/gtest.h>

#include <openssl/sha.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

namespace sandgate::gateway {
namespace {

// The result of one check, the principal it names dropped.
struct checker {
  authenticator a;
  auth_result check(std::string_view header, std::string_view query) const {
    principal who;
    return a.check(header, query, who);
  }
  bool enabled() const { return a.enabled(); }
};

const checker auth{authenticator{"s3cret-token"}};

TEST(auth, token_header_schemes) {
  EXPECT_EQ(auth.check("token s3cret-token", ""), auth_result::ok);
  EXPECT_EQ(auth.check("Token s3cret-token", ""), auth_result::ok);
  EXPECT_EQ(auth.check("Bearer s3cret-token", ""), auth_result::ok);
  EXPECT_EQ(auth.check("bearer s3cret-token", ""), auth_result::ok);
}

TEST(auth, query_token) {
  EXPECT_EQ(auth.check("", "s3cret-token"), auth_result::ok);
  EXPECT_EQ(auth.check("", "wrong"), auth_result::wrong);
}

TEST(auth, missing) {
  EXPECT_EQ(auth.check("", ""), auth_result::missing);
  EXPECT_EQ(auth.check("token ", ""), auth_result::missing);
  EXPECT_EQ(auth.check("Bearer ", ""), auth_result::missing);
  // An unknown scheme is no token at all.
  EXPECT_EQ(auth.check("Basic czNjcmV0LXRva2Vu", ""), auth_result::missing);
  EXPECT_EQ(auth.check("s3cret-token", ""), auth_result::missing);
}

TEST(auth, wrong) {
  EXPECT_EQ(auth.check("token wrong", ""), auth_result::wrong);
  EXPECT_EQ(auth.check("Bearer wrong", ""), auth_result::wrong);
  EXPECT_EQ(auth.check("token s3cret-toke", ""), auth_result::wrong);    // prefix
  EXPECT_EQ(auth.check("token s3cret-tokenX", ""), auth_result::wrong);  // extension
  EXPECT_EQ(auth.check("token S3CRET-TOKEN", ""), auth_result::wrong);   // case matters
  EXPECT_EQ(auth.check("token  s3cret-token", ""), auth_result::wrong);  // extra space is part of it
  EXPECT_EQ(auth.check("token s3cret-token ", ""), auth_result::wrong);
  EXPECT_EQ(auth.check("", "s3cret-token\n"), auth_result::wrong);
}

TEST(auth, header_is_used_before_the_query) {
  EXPECT_EQ(auth.check("token s3cret-token", "wrong"), auth_result::ok);
  EXPECT_EQ(auth.check("token wrong", "s3cret-token"), auth_result::wrong);
  // A header in an unknown scheme leaves the query token to decide.
  EXPECT_EQ(auth.check("Basic xyz", "s3cret-token"), auth_result::ok);
}

TEST(auth, disabled_when_the_token_is_empty) {
  const checker off{authenticator{""}};
  EXPECT_FALSE(off.enabled());
  EXPECT_TRUE(auth.enabled());
  EXPECT_EQ(off.check("", ""), auth_result::ok);
  EXPECT_EQ(off.check("token anything", "x"), auth_result::ok);
}

TEST(auth, generated_tokens_are_48_hex_digits_and_differ) {
  const auto a = generate_token(), b = generate_token();
  EXPECT_TRUE(std::regex_match(a, std::regex("^[0-9a-f]{48}$"))) << a;
  EXPECT_NE(a, b);
  const checker fresh{authenticator{a}};
  EXPECT_EQ(fresh.check("token " + a, ""), auth_result::ok);
  EXPECT_EQ(fresh.check("token " + b, ""), auth_result::wrong);
}

std::filesystem::path write_file(const std::string& text) {
  const auto path =
      std::filesystem::temp_directory_path() / ("sandgate-tokens-" + generate_token() + ".json");
  std::ofstream(path) << text;
  return path;
}

TEST(auth, tokens_file_maps_token_digests_to_principals) {
  const auto alice = "alice-" + generate_token();
  const auto ops = "ops-" + generate_token();
  auto sha = [](const std::string& t) {
    unsigned char d[32];
    SHA256(reinterpret_cast<const unsigned char*>(t.data()), t.size(), d);
    std::string hex;
    for (unsigned char c : d) {
      static const char* digits = "0123456789abcdef";
      hex += digits[c >> 4];
      hex += digits[c & 15];
    }
    return hex;
  };
  const auto path = write_file(R"({"principals": [
      {"name": "alice", "token_sha256": ")" +
                               sha(alice) + R"(", "quotas": {"sandboxes": 2, "memory_bytes": 1024}},
      {"name": "ops", "token_sha256": ")" +
                               sha(ops) + R"(", "admin": true}]})");
  const authenticator a{"gateway-token", path};
  std::filesystem::remove(path);
  principal who;
  ASSERT_EQ(a.check("token " + alice, "", who), auth_result::ok);
  EXPECT_EQ(who.name, "alice");
  EXPECT_FALSE(who.admin);
  EXPECT_EQ(who.limits.sandboxes, 2u);
  EXPECT_EQ(who.limits.memory_bytes, 1024u);
  EXPECT_FALSE(who.limits.kernels);
  EXPECT_TRUE(who.sees("alice"));
  EXPECT_FALSE(who.sees("ops"));
  ASSERT_EQ(a.check("", ops, who), auth_result::ok);
  EXPECT_EQ(who.name, "ops");
  EXPECT_TRUE(who.sees("alice"));
  ASSERT_EQ(a.check("Bearer gateway-token", "", who), auth_result::ok);
  EXPECT_EQ(who.name, "admin");
  EXPECT_TRUE(who.admin);
  EXPECT_EQ(a.check("token " + sha(alice), "", who), auth_result::wrong);  // the digest is not the token
  EXPECT_EQ(a.check("token alice", "", who), auth_result::wrong);
}

TEST(auth, bad_tokens_files_are_refused_with_a_reason) {
  const std::string good_sha(64, 'a');
  for (const std::string& text :
       {std::string("not json"), std::string(R"({"principals": {}})"),
        std::string(R"({"principals": [{"token_sha256": ")") + good_sha + R"("}]})",
        std::string(R"({"principals": [{"name": "x", "token_sha256": "abc"}]})"),
        std::string(R"({"principals": [{"name": "x", "token_sha256": ")") + good_sha +
            R"(", "quotas": {"kernels": -1}}]})",
        std::string(R"({"principals": [{"name": "admin", "token_sha256": ")") + good_sha + R"("}]})",
        std::string(R"({"principals": [{"name": "x", "token_sha256": ")") + good_sha +
            R"("}, {"name": "x", "token_sha256": ")" + good_sha + R"("}]})"}) {
    const auto path = write_file(text);
    EXPECT_THROW(authenticator("t", path), std::runtime_error) << text;
    std::filesystem::remove(path);
  }
  EXPECT_THROW(authenticator("t", "/nonexistent/tokens.json"), std::runtime_error);
}

TEST(auth, a_tokens_file_alone_turns_auth_on) {
  const auto path =
      write_file(R"({"principals": [{"name": "x", "token_sha256": ")" + std::string(64, 'b') + R"("}]})");
  const checker c{authenticator{"", path}};
  std::filesystem::remove(path);
  EXPECT_TRUE(c.enabled());
  EXPECT_EQ(c.check("", ""), auth_result::missing);
}

}  // namespace
}  // namespace sandgate::gateway
