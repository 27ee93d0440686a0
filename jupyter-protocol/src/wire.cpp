// The ZeroMQ wire codec: frames <-> message, signed with HMAC-SHA256.

#include <jupyter_protocol/errors.hpp>
#include <jupyter_protocol/wire.hpp>

#include <algorithm>

namespace sandgate::protocol {
namespace {

// Signature, header, parent_header, metadata, content.
constexpr std::size_t parts_after_delimiter = 5;

}  // namespace

std::vector<std::string> encode(const message& m, const signer& s) {
  std::vector<std::string> frames;
  frames.reserve(m.identities.size() + 1 + parts_after_delimiter + m.buffers.size());
  frames.insert(frames.end(), m.identities.begin(), m.identities.end());
  frames.emplace_back(delimiter);
  frames.push_back(s.sign(m.header, m.parent_header, m.metadata, m.content));
  frames.push_back(m.header);
  frames.push_back(m.parent_header);
  frames.push_back(m.metadata);
  frames.push_back(m.content);
  frames.insert(frames.end(), m.buffers.begin(), m.buffers.end());
  return frames;
}

std::vector<std::string> encode(message&& m, const signer& s) {
  std::vector<std::string> frames;
  frames.reserve(m.identities.size() + 1 + parts_after_delimiter + m.buffers.size());
  std::move(m.identities.begin(), m.identities.end(), std::back_inserter(frames));
  frames.emplace_back(delimiter);
  frames.push_back(s.sign(m.header, m.parent_header, m.metadata, m.content));
  frames.push_back(std::move(m.header));
  frames.push_back(std::move(m.parent_header));
  frames.push_back(std::move(m.metadata));
  frames.push_back(std::move(m.content));
  std::move(m.buffers.begin(), m.buffers.end(), std::back_inserter(frames));
  return frames;
}

namespace {

// Where the signature is, after checking the delimiter, the frame count,
// the HMAC and the two headers, in that order.
template <class Frames>
std::error_code check(const Frames& frames, const signer& s, std::size_t& sig, header_fields& head,
                      header_fields& parent) {
  const auto found = std::find(frames.begin(), frames.end(), delimiter);
  if (found == frames.end()) return protocol_errc::missing_delimiter;
  const auto delimiter_index = static_cast<std::size_t>(found - frames.begin());
  if (frames.size() - delimiter_index - 1 < parts_after_delimiter) return protocol_errc::too_few_frames;
  sig = delimiter_index + 1;
  if (auto ec = s.verify(frames[sig], frames[sig + 1], frames[sig + 2], frames[sig + 3], frames[sig + 4]))
    return ec;
  if (auto ec = parse_header(frames[sig + 1], head, /*require_ids=*/true)) return ec;
  return parse_header(frames[sig + 2], parent, /*require_ids=*/false);
}

}  // namespace

std::error_code decode(std::vector<std::string>&& frames, const signer& s, message& out) {
  std::size_t sig = 0;
  header_fields head;
  header_fields parent;
  if (auto ec = check(frames, s, sig, head, parent)) return ec;
  const auto identities_end = frames.begin() + static_cast<std::ptrdiff_t>(sig - 1);
  out.identities.clear();
  out.identities.reserve(sig - 1);
  std::move(frames.begin(), identities_end, std::back_inserter(out.identities));
  out.header = std::move(frames[sig + 1]);
  out.parent_header = std::move(frames[sig + 2]);
  out.metadata = std::move(frames[sig + 3]);
  out.content = std::move(frames[sig + 4]);
  out.buffers.clear();
  out.buffers.reserve(frames.size() - sig - parts_after_delimiter);
  std::move(frames.begin() + static_cast<std::ptrdiff_t>(sig + parts_after_delimiter), frames.end(),
            std::back_inserter(out.buffers));
  out.head = std::move(head);
  out.parent = std::move(parent);
  frames.clear();
  return {};
}

std::error_code decode_head(const std::vector<std::string_view>& frames, const signer& s, message& out) {
  std::size_t sig = 0;
  header_fields head;
  header_fields parent;
  if (auto ec = check(frames, s, sig, head, parent)) return ec;
  out.identities.assign(frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(sig - 1));
  out.header = std::string(frames[sig + 1]);
  out.parent_header = std::string(frames[sig + 2]);
  out.metadata.clear();
  out.content.clear();
  out.buffers.clear();
  out.head = std::move(head);
  out.parent = std::move(parent);
  return {};
}

}  // namespace sandgate::protocol
