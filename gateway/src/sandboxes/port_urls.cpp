#include "port_urls.hpp"

#include <gateway/ids.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sandgate::gateway {
namespace {

std::string read_or_make_key(const std::filesystem::path& file) {
  {
    std::ifstream in(file);
    std::string key;
    if (in >> key && key.size() == 64) return key;
  }
  std::string key = random_hex(32);
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot write the port URL key " + file.string());
  const bool ok =
      ::write(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size()) && ::fchmod(fd, 0600) == 0;
  ::close(fd);
  if (!ok) throw std::runtime_error("cannot write the port URL key " + file.string());
  return key;
}

}  // namespace

port_urls::port_urls(const std::filesystem::path& key_file) : signer_(read_or_make_key(key_file)) {}

std::string port_urls::subject(const std::string& sandbox_id, std::uint16_t port,
                               std::int64_t expires_at) const {
  return "sandgate-port-url-v1|" + sandbox_id + "|" + std::to_string(port) + "|" + std::to_string(expires_at);
}

std::string port_urls::token(const std::string& sandbox_id, std::uint16_t port,
                             std::int64_t expires_at) const {
  return std::to_string(expires_at) + "." + signer_.sign(subject(sandbox_id, port, expires_at), "", "", "");
}

bool port_urls::valid(std::string_view token, const std::string& sandbox_id, std::uint16_t port,
                      std::int64_t now) const {
  const auto dot = token.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 12) return false;
  std::int64_t expires_at = 0;
  const auto [end, ec] = std::from_chars(token.data(), token.data() + dot, expires_at);
  if (ec != std::errc() || end != token.data() + dot || expires_at <= now) return false;
  return !signer_.verify(token.substr(dot + 1), subject(sandbox_id, port, expires_at), "", "", "");
}

}  // namespace sandgate::gateway
