#include "sandgate_kernels/utf8_chunker.hpp"

#include <cstddef>
#include <cstdint>

namespace sandgate::kernels {
namespace {

constexpr std::string_view replacement = "\xEF\xBF\xBD";

// Length of the sequence a lead byte announces, or 0 if it cannot lead.
std::size_t sequence_length(std::uint8_t lead) {
  if (lead < 0x80) {
    return 1;
  }
  if (lead >= 0xC2 && lead <= 0xDF) {
    return 2;
  }
  if (lead >= 0xE0 && lead <= 0xEF) {
    return 3;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    return 4;
  }
  return 0;
}

// Whether byte i (1-based within the sequence) is a valid continuation,
// including the overlong/surrogate/range rules on the second byte.
bool valid_continuation(std::uint8_t lead, std::size_t i, std::uint8_t byte) {
  if (i == 1) {
    if (lead == 0xE0) {
      return byte >= 0xA0 && byte <= 0xBF;
    }
    if (lead == 0xED) {
      return byte >= 0x80 && byte <= 0x9F;
    }
    if (lead == 0xF0) {
      return byte >= 0x90 && byte <= 0xBF;
    }
    if (lead == 0xF4) {
      return byte >= 0x80 && byte <= 0x8F;
    }
  }
  return byte >= 0x80 && byte <= 0xBF;
}

}  // namespace

std::string utf8_chunker::feed(std::string_view bytes) {
  std::string input = std::move(pending_);
  pending_.clear();
  input.append(bytes);

  std::string out;
  out.reserve(input.size());
  std::size_t pos = 0;
  while (pos < input.size()) {
    const auto lead = static_cast<std::uint8_t>(input[pos]);
    const std::size_t length = sequence_length(lead);
    if (length == 0) {
      out.append(replacement);
      ++pos;
      continue;
    }
    std::size_t i = 1;
    while (i < length && pos + i < input.size() &&
           valid_continuation(lead, i, static_cast<std::uint8_t>(input[pos + i]))) {
      ++i;
    }
    if (i == length) {
      out.append(input, pos, length);
      pos += length;
    } else if (pos + i == input.size()) {
      pending_ = input.substr(pos);  // incomplete so far: wait for more bytes
      break;
    } else {
      out.append(replacement);
      pos += i;
    }
  }
  return out;
}

std::string utf8_chunker::finish() {
  std::string out;
  if (!pending_.empty()) {
    out.append(replacement);
    pending_.clear();
  }
  return out;
}

}  // namespace sandgate::kernels
