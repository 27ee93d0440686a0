#include "socket_pins.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sandgate::gateway {

void socket_pins::clear(const std::filesystem::path& dir, const std::vector<std::string>& names) {
  for (const auto& name : names)
    ::unlink((dir / name).c_str());  // unlink removes a link, not its target
}

bool socket_pins::pin(const std::filesystem::path& dir, const std::vector<std::string>& names, uid_t owner) {
  reset();
  for (const auto& name : names) {
    sandboxing::unique_fd fd(::open((dir / name).c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return reset(), false;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != owner) return reset(), false;
    fds_.push_back(std::move(fd));
  }
  return true;
}

std::string socket_pins::endpoint(std::size_t i) const {
  return "ipc:///proc/self/fd/" + std::to_string(fds_.at(i).get());
}

void socket_pins::reset() {
  fds_.clear();
}

}  // namespace sandgate::gateway
