#pragma once
// Kernel, sandbox and session ids: standard UUID text (jupyter_server rejects
// any other shape) in the version-8 layout, with the first 16 bits holding
// the number of the gateway node that owns the resource; the rest is random.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sandgate::gateway {

[[nodiscard]] std::string new_id(std::uint16_t node);

// The node number of a well-formed id, or nothing for any other text.
[[nodiscard]] std::optional<std::uint16_t> id_node(std::string_view id);

// `bytes` random bytes from OpenSSL as lowercase hex: keys and tokens.
[[nodiscard]] std::string random_hex(std::size_t bytes);

// True for canonical 8-4-4-4-12 lowercase or uppercase hex UUID text.
[[nodiscard]] bool is_uuid(std::string_view text);

}  // namespace sandgate::gateway
