#pragma once
// Jupyter connection files: read, write (mode 0600), and endpoints for the
// tcp and ipc transports (ipc sockets are "<ip>-<port>").

#include <jupyter_protocol/websocket.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

namespace sandgate::protocol {

struct connection_info {
  std::string transport = "ipc";  // "ipc" or "tcp"
  std::string ip;                 // address for tcp, path prefix for ipc
  std::uint16_t shell_port = 0;
  std::uint16_t iopub_port = 0;
  std::uint16_t stdin_port = 0;
  std::uint16_t control_port = 0;
  std::uint16_t hb_port = 0;
  std::string key;
  std::string signature_scheme = "hmac-sha256";
  std::string kernel_name;

  // "ipc://<ip>-<port>" or "tcp://<ip>:<port>".
  [[nodiscard]] std::string endpoint(channel c) const;
};

[[nodiscard]] std::string to_json(const connection_info& info);
// Throws std::invalid_argument with a clear message for bad or incomplete JSON.
[[nodiscard]] connection_info connection_info_from_json(std::string_view json);

// Throws std::system_error / std::invalid_argument.
[[nodiscard]] connection_info read_connection_file(const std::filesystem::path& path);
// Creates the file with mode 0600 (replacing any existing one atomically).
void write_connection_file(const std::filesystem::path& path, const connection_info& info);

}  // namespace sandgate::protocol
