#pragma once
// Errors from decoding untrusted input. Decoders return one of these as a
// std::error_code and never throw on bad input.

#include <string>
#include <system_error>

namespace sandgate::protocol {

enum class protocol_errc {
  missing_delimiter = 1,  // no <IDS|MSG> frame
  too_few_frames,         // fewer than signature + 4 parts after the delimiter
  bad_signature_length,   // signature frame is not 64 hex digits (or not empty when unsigned)
  bad_signature_hex,      // signature frame has a non-hex digit
  signature_mismatch,     // HMAC differs (constant-time compare)
  unsupported_scheme,     // signature_scheme other than hmac-sha256
  bad_json,               // a part that must be JSON is not
  not_an_object,          // header/parent_header/metadata/content is not a JSON object
  missing_field,          // header lacks msg_id or msg_type (or a message lacks its header)
  bad_channel,            // unknown or missing WebSocket channel
  truncated_frame,        // v1/binary frame shorter than its offset table
  bad_offsets,            // offsets not ascending or count inconsistent
  offset_out_of_range,    // offset beyond the frame
  message_too_large,      // over a configured size limit
};

const std::error_category& protocol_category() noexcept;
std::error_code make_error_code(protocol_errc e) noexcept;

}  // namespace sandgate::protocol

template <>
struct std::is_error_code_enum<sandgate::protocol::protocol_errc> : std::true_type {};
