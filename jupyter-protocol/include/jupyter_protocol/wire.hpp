#pragma once
// The ZeroMQ wire codec: [identities..., "<IDS|MSG>", signature, header,
// parent_header, metadata, content, buffers...].

#include <jupyter_protocol/message.hpp>
#include <jupyter_protocol/signer.hpp>

#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace sandgate::protocol {

inline constexpr std::string_view delimiter = "<IDS|MSG>";

// Frames ready to send, signed with `s`.
[[nodiscard]] std::vector<std::string> encode(const message& m, const signer& s);
// The same, moving the message's parts into the frames instead of copying.
[[nodiscard]] std::vector<std::string> encode(message&& m, const signer& s);

// Decodes and verifies. Checks, in order: the delimiter, the frame count, the
// signature length and digits, the HMAC (constant time), and only then the
// header JSON. Frames are moved into `out`; metadata/content stay raw text
// (the decoder checks only that header and parent_header are JSON objects).
[[nodiscard]] std::error_code decode(std::vector<std::string>&& frames, const signer& s, message& out);

// For a message too large to take in whole: the same checks, over views of
// its frames, filling only what routes it (identities, header and
// parent_header, as text and parsed); metadata, content and buffers stay
// empty. The views need only live for the call.
[[nodiscard]] std::error_code decode_head(const std::vector<std::string_view>& frames, const signer& s,
                                          message& out);

}  // namespace sandgate::protocol
