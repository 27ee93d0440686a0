// Channel names as they appear on the WebSocket and in connection files.

#include <jupyter_protocol/websocket.hpp>

namespace sandgate::protocol {

std::string_view to_string(channel c) noexcept {
  switch (c) {
    case channel::shell:
      return "shell";
    case channel::iopub:
      return "iopub";
    case channel::stdin_:
      return "stdin";
    case channel::control:
      return "control";
    case channel::hb:
      return "hb";
  }
  return "shell";
}

std::optional<channel> parse_channel(std::string_view name) noexcept {
  if (name == "shell") return channel::shell;
  if (name == "iopub") return channel::iopub;
  if (name == "stdin") return channel::stdin_;
  if (name == "control") return channel::control;
  if (name == "hb") return channel::hb;
  return std::nullopt;
}

}  // namespace sandgate::protocol
