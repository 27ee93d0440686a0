#include "api/auth.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <string>

namespace sandgate::gateway {
namespace {

const authenticator auth{"s3cret-token"};

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
  const authenticator off{""};
  EXPECT_FALSE(off.enabled());
  EXPECT_TRUE(auth.enabled());
  EXPECT_EQ(off.check("", ""), auth_result::ok);
  EXPECT_EQ(off.check("token anything", "x"), auth_result::ok);
}

TEST(auth, generated_tokens_are_48_hex_digits_and_differ) {
  const auto a = generate_token(), b = generate_token();
  EXPECT_TRUE(std::regex_match(a, std::regex("^[0-9a-f]{48}$"))) << a;
  EXPECT_NE(a, b);
  const authenticator fresh{a};
  EXPECT_EQ(fresh.check("token " + a, ""), auth_result::ok);
  EXPECT_EQ(fresh.check("token " + b, ""), auth_result::wrong);
}

}  // namespace
}  // namespace sandgate::gateway
