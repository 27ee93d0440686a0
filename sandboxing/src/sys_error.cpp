#include "sandboxing/sys_error.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "sandboxing/unique_fd.hpp"

namespace sandgate::sandboxing {

sys_error::sys_error(std::string_view call, int error_number)
    : std::runtime_error(std::string(call) + ": " + std::generic_category().message(error_number)),
      error_number_(error_number) {}

long check_sys(long result, std::string_view call) {
  if (result == -1) throw sys_error(call, errno);
  return result;
}

void write_file(const std::string& path, std::string_view text) {
  unique_fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) throw sys_error("open(" + path + ", O_WRONLY)", errno);
  const ssize_t n = ::write(fd.get(), text.data(), text.size());
  if (n < 0) throw sys_error("write(" + path + ", \"" + std::string(text) + "\")", errno);
  if (static_cast<std::size_t>(n) != text.size()) {
    throw sys_error("write(" + path + ", \"" + std::string(text) + "\") short", EIO);
  }
}

std::string read_file(const std::string& path) {
  unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw sys_error("open(" + path + ", O_RDONLY)", errno);
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0) throw sys_error("read(" + path + ")", errno);
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > (1u << 20)) break;
  }
  return text;
}

}  // namespace sandgate::sandboxing
