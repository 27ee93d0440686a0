#include <jupyter_protocol/signer.hpp>

#include <jupyter_protocol/errors.hpp>

#include "fixtures.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace sandgate::protocol {
namespace {

TEST(signer, rfc4231_vector_split_over_the_four_parts) {
  const signer s{"Jefe"};
  EXPECT_EQ(s.sign("what do ", "ya want ", "for not", "hing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(signer, matches_jupyter_client) {
  for (const auto& g : testing::golden_cases()) {
    SCOPED_TRACE(g.name);
    const signer s{g.key};
    const auto& f = g.zmq_frames;
    const std::size_t h = g.identities + 2;
    EXPECT_EQ(s.sign(f[h], f[h + 1], f[h + 2], f[h + 3]), g.signature);
    EXPECT_FALSE(s.verify(g.signature, f[h], f[h + 1], f[h + 2], f[h + 3]));
  }
}

TEST(signer, unsigned_signs_empty_and_accepts_only_empty) {
  const signer s;
  EXPECT_FALSE(s.enabled());
  EXPECT_EQ(s.sign("{}", "{}", "{}", "{}"), "");
  EXPECT_FALSE(s.verify("", "{}", "{}", "{}", "{}"));
  EXPECT_EQ(s.verify("00", "{}", "{}", "{}", "{}"), protocol_errc::bad_signature_length);
  EXPECT_FALSE(signer{""}.enabled());
}

TEST(signer, verify_errors_in_order) {
  const signer s{"key"};
  const std::string good = s.sign("h", "p", "m", "c");
  EXPECT_EQ(s.verify("", "h", "p", "m", "c"), protocol_errc::bad_signature_length);
  EXPECT_EQ(s.verify(good.substr(1), "h", "p", "m", "c"), protocol_errc::bad_signature_length);
  EXPECT_EQ(s.verify(good + "0", "h", "p", "m", "c"), protocol_errc::bad_signature_length);
  std::string not_hex = good;
  not_hex[10] = 'g';
  EXPECT_EQ(s.verify(not_hex, "h", "p", "m", "c"), protocol_errc::bad_signature_hex);
  std::string wrong = good;
  wrong[63] = wrong[63] == '0' ? '1' : '0';
  EXPECT_EQ(s.verify(wrong, "h", "p", "m", "c"), protocol_errc::signature_mismatch);
  EXPECT_EQ(s.verify(good, "h", "p", "m", "C"), protocol_errc::signature_mismatch);
  EXPECT_EQ(signer{"other"}.verify(good, "h", "p", "m", "c"), protocol_errc::signature_mismatch);
  EXPECT_FALSE(s.verify(good, "h", "p", "m", "c"));
}

TEST(signer, part_boundaries_are_not_significant_as_in_jupyter) {
  // Jupyter signs the concatenation; this documents that it is not framed.
  const signer s{"key"};
  EXPECT_EQ(s.sign("ab", "c", "", ""), s.sign("a", "bc", "", ""));
}

TEST(signer, refuses_other_schemes) {
  EXPECT_NO_THROW(signer("k", "hmac-sha256"));
  for (const char* scheme : {"hmac-md5", "hmac-sha1", "hmac-sha512", "HMAC-SHA256", ""}) {
    try {
      signer s{"k", scheme};
      ADD_FAILURE() << "accepted " << scheme;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("hmac-sha256"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace sandgate::protocol
