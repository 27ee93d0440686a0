// DNS as the egress proxy speaks it to the resolver an operator names
// (sandgate-egress --resolver): a query for one name's A or AAAA records,
// and the addresses an answer to that query gives, following CNAMEs from the
// name asked. Pure functions over bytes; no I/O. Everything in an answer is
// bounded by the message (compression pointers only point back, at most 16
// of them per name, names at most 255 bytes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandboxing/ip_address.hpp"

namespace sandgate::egress::dns {

enum class record_type : std::uint16_t { a = 1, cname = 5, aaaa = 28 };

inline constexpr std::size_t max_udp_bytes = 1232;  // the EDNS payload size asked for
inline constexpr std::size_t max_cname_chain = 8;

// The query: `id`, recursion desired, one question (`name`, `type`, class
// IN) and an EDNS OPT record; nothing when `name` is not a DNS name.
[[nodiscard]] std::optional<std::string> encode_query(std::uint16_t id, std::string_view name,
                                                      record_type type);

// The id of a message (its first two bytes), or nothing when it is shorter.
[[nodiscard]] std::optional<std::uint16_t> message_id(std::string_view message);

struct answer {
  std::vector<sandboxing::ip_address> addresses;  // in the answer's order, no duplicates
  std::string error;                              // set when the answer is unusable or says no
};

// What the response `message` to the query (`id`, `name`, `type`) says:
// the addresses of `type` that `name` has (directly or through CNAMEs in the
// answer section), an empty list when it has none, or an error naming why
// the message is not a usable answer (not a response, another question, a
// failure code, a malformed record).
[[nodiscard]] answer parse_answer(std::string_view message, std::uint16_t id, std::string_view name,
                                  record_type type);

}  // namespace sandgate::egress::dns
