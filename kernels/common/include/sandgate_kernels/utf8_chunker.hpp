// Turns a byte stream cut at arbitrary points into valid UTF-8 chunks.
#pragma once

#include <string>
#include <string_view>

namespace sandgate::kernels {

// Jupyter messages are JSON, so stream text must be valid UTF-8. feed()
// returns the longest valid prefix of what it has seen, holding back an
// incomplete trailing sequence (at most 3 bytes) for the next call and
// replacing invalid bytes with U+FFFD. finish() flushes the held-back bytes.
class utf8_chunker {
 public:
  std::string feed(std::string_view bytes);
  std::string finish();

 private:
  std::string pending_;  // an incomplete sequence from the previous feed
};

}  // namespace sandgate::kernels
