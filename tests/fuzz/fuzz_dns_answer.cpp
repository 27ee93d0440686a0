// libFuzzer target: the egress proxy's reading of a DNS answer
// (sandboxing/src/egress/dns_message). Input: one byte (bit 0: AAAA, else A),
// then the message, checked as the answer to a query for files.example.org
// with the message's own id. Whatever the bytes: no crash or overread, and a
// usable answer holds only addresses of the type asked, each once, no more
// than the message could carry.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dns_message.hpp"

namespace dns = sandgate::egress::dns;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const auto type = (data[0] & 1) != 0 ? dns::record_type::aaaa : dns::record_type::a;
  const std::string_view message(reinterpret_cast<const char*>(data + 1), size - 1);
  const auto id = dns::message_id(message);
  if (!id) return 0;
  const auto answer = dns::parse_answer(message, *id, "files.example.org", type);
  if (!answer.error.empty()) return 0;
  const auto& found = answer.addresses;
  if (found.size() > message.size() / 4) std::abort();
  for (std::size_t i = 0; i < found.size(); ++i) {
    if (found[i].v4 != (type == dns::record_type::a)) std::abort();
    if (std::find(found.begin() + static_cast<std::ptrdiff_t>(i) + 1, found.end(), found[i]) != found.end())
      std::abort();
  }
  return 0;
}
