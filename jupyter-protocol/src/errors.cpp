// The protocol_errc error category.

#include <jupyter_protocol/errors.hpp>

namespace sandgate::protocol {
namespace {

class protocol_category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "jupyter-protocol"; }

  std::string message(int value) const override {
    switch (static_cast<protocol_errc>(value)) {
      case protocol_errc::missing_delimiter:
        return "no <IDS|MSG> delimiter frame";
      case protocol_errc::too_few_frames:
        return "too few frames after the delimiter";
      case protocol_errc::bad_signature_length:
        return "signature has the wrong length";
      case protocol_errc::bad_signature_hex:
        return "signature is not hexadecimal";
      case protocol_errc::signature_mismatch:
        return "signature does not match";
      case protocol_errc::unsupported_scheme:
        return "unsupported signature scheme";
      case protocol_errc::bad_json:
        return "invalid JSON (or nested more than 1000 levels deep)";
      case protocol_errc::not_an_object:
        return "JSON value is not an object";
      case protocol_errc::missing_field:
        return "header lacks a required field";
      case protocol_errc::bad_channel:
        return "unknown or missing channel";
      case protocol_errc::truncated_frame:
        return "frame shorter than its offset table";
      case protocol_errc::bad_offsets:
        return "offsets not ascending or count inconsistent";
      case protocol_errc::offset_out_of_range:
        return "offset beyond the end of the frame";
      case protocol_errc::message_too_large:
        return "message over the size limit";
    }
    return "unknown protocol error";
  }
};

}  // namespace

const std::error_category& protocol_category() noexcept {
  static const protocol_category_impl category;
  return category;
}

std::error_code make_error_code(protocol_errc e) noexcept {
  return {static_cast<int>(e), protocol_category()};
}

}  // namespace sandgate::protocol
