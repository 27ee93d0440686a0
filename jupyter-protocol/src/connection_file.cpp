// Connection files: JSON (de)serialisation, endpoints, and an atomic 0600 write.

#include <jupyter_protocol/connection_file.hpp>
#include <jupyter_protocol/message.hpp>

#include <nlohmann/json.hpp>
#include <sandboxing/unique_fd.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace sandgate::protocol {
namespace {

using json = nlohmann::json;
using sandboxing::unique_fd;

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

std::uint16_t port_field(const json& j, const char* name) {
  const auto it = j.find(name);
  if (it == j.end()) throw std::invalid_argument(std::string("connection file: missing \"") + name + "\"");
  if (!it->is_number_unsigned() || it->get<std::uint64_t>() > 65535) {
    throw std::invalid_argument(std::string("connection file: \"") + name + "\" is not a port number");
  }
  return static_cast<std::uint16_t>(it->get<std::uint64_t>());
}

std::string string_field(const json& j, const char* name, const char* fallback) {
  const auto it = j.find(name);
  if (it == j.end()) {
    if (fallback != nullptr) return fallback;
    throw std::invalid_argument(std::string("connection file: missing \"") + name + "\"");
  }
  if (!it->is_string())
    throw std::invalid_argument(std::string("connection file: \"") + name + "\" is not a string");
  return it->get<std::string>();
}

void write_all(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("write(" + path + ")");
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

std::string connection_info::endpoint(channel c) const {
  std::uint16_t port = 0;
  switch (c) {
    case channel::shell:
      port = shell_port;
      break;
    case channel::iopub:
      port = iopub_port;
      break;
    case channel::stdin_:
      port = stdin_port;
      break;
    case channel::control:
      port = control_port;
      break;
    case channel::hb:
      port = hb_port;
      break;
  }
  if (transport == "ipc") return "ipc://" + ip + "-" + std::to_string(port);
  return "tcp://" + ip + ":" + std::to_string(port);
}

std::string to_json(const connection_info& info) {
  json j = {
      {"shell_port", info.shell_port},
      {"iopub_port", info.iopub_port},
      {"stdin_port", info.stdin_port},
      {"control_port", info.control_port},
      {"hb_port", info.hb_port},
      {"ip", info.ip},
      {"key", info.key},
      {"transport", info.transport},
      {"signature_scheme", info.signature_scheme},
      {"kernel_name", info.kernel_name},
  };
  return j.dump(1);
}

connection_info connection_info_from_json(std::string_view text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || text.find('\0') != std::string_view::npos)
    throw std::invalid_argument("connection file: invalid JSON");
  if (!j.is_object()) throw std::invalid_argument("connection file: not a JSON object");
  connection_info info;
  info.transport = string_field(j, "transport", "tcp");
  if (info.transport != "tcp" && info.transport != "ipc") {
    throw std::invalid_argument("connection file: transport \"" + info.transport +
                                "\" is not \"tcp\" or \"ipc\"");
  }
  info.ip = string_field(j, "ip", nullptr);
  info.shell_port = port_field(j, "shell_port");
  info.iopub_port = port_field(j, "iopub_port");
  info.stdin_port = port_field(j, "stdin_port");
  info.control_port = port_field(j, "control_port");
  info.hb_port = port_field(j, "hb_port");
  info.key = string_field(j, "key", "");
  info.signature_scheme = string_field(j, "signature_scheme", "hmac-sha256");
  info.kernel_name = string_field(j, "kernel_name", "");
  return info;
}

connection_info read_connection_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::system_error(errno, std::generic_category(), "open(" + path.string() + ")");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw std::system_error(errno, std::generic_category(), "read(" + path.string() + ")");
  return connection_info_from_json(text.str());
}

void write_connection_file(const std::filesystem::path& path, const connection_info& info) {
  const std::string text = to_json(info);
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  const std::filesystem::path temp = dir / ("." + path.filename().string() + "." + new_uuid4() + ".tmp");
  const std::string temp_name = temp.string();
  unique_fd fd{::open(temp_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, S_IRUSR | S_IWUSR)};
  if (fd.get() < 0) throw_errno("open(" + temp_name + ", O_CREAT|O_EXCL, 0600)");
  try {
    // The umask cannot widen 0600, but an inherited ACL default could: be explicit.
    if (::fchmod(fd.get(), S_IRUSR | S_IWUSR) != 0) throw_errno("fchmod(" + temp_name + ", 0600)");
    write_all(fd.get(), text, temp_name);
    if (::fsync(fd.get()) != 0) throw_errno("fsync(" + temp_name + ")");
    if (fd.close() != 0) throw_errno("close(" + temp_name + ")");
    if (::rename(temp_name.c_str(), path.c_str()) != 0) {
      throw_errno("rename(" + temp_name + ", " + path.string() + ")");
    }
  } catch (...) {
    ::unlink(temp_name.c_str());
    throw;
  }
  // Make the rename durable; failure here leaves a complete file, so ignore it.
  unique_fd dir_fd{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (dir_fd.get() >= 0) (void)::fsync(dir_fd.get());
}

}  // namespace sandgate::protocol
