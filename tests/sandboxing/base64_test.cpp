#include "sandboxing/base64.hpp"

#include <gtest/gtest.h>

namespace control = sandgate::sandboxing::control;

TEST(base64, rfc4648_test_vectors) {
  const std::pair<std::string, std::string> vectors[] = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
  };
  for (const auto& [raw, text] : vectors) {
    EXPECT_EQ(control::base64_encode(raw), text) << raw;
    EXPECT_EQ(control::base64_decode(text), raw) << text;
  }
}

TEST(base64, every_byte_value_round_trips) {
  std::string raw;
  for (int i = 0; i < 256 * 3 + 1; ++i)
    raw += static_cast<char>(i * 7);
  const std::string text = control::base64_encode(raw);
  EXPECT_EQ(text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="),
            std::string::npos);
  EXPECT_EQ(control::base64_decode(text), raw);
}

TEST(base64, refuses_text_that_is_not_canonical_base64) {
  for (const std::string text : {"Zg", "Zg=", "Zm9", "Z===", "Zg=a", "=g==", "Zm9v Zg==", "Zm9\n",
                                 "Zh==", "Zm9=Zm9v", "Zm-v", "Zm_v", "Zm9vYmE=Zg=="}) {
    EXPECT_EQ(control::base64_decode(text), std::nullopt) << text;
  }
}
