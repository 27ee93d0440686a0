#pragma once
// The kernel's ipc sockets live in a run dir the sandbox user owns, so any
// path there may become a symlink to a host socket. Each socket is opened
// with O_PATH|O_NOFOLLOW, checked to be a socket owned by the sandbox user,
// and ZeroMQ connects through /proc/self/fd/N: the inode is pinned, and a
// link planted later (even during ZeroMQ's reconnects) is never followed.

#include <sandboxing/unique_fd.hpp>

#include <sys/types.h>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::gateway {

class socket_pins {
 public:
  socket_pins() = default;
  socket_pins(const socket_pins&) = delete;
  socket_pins& operator=(const socket_pins&) = delete;

  // Removes what is left at those names from an earlier run (never following links).
  static void clear(const std::filesystem::path& dir, const std::vector<std::string>& names);

  // Pins every named socket; false (nothing pinned) until all exist as
  // sockets owned by `owner`.
  bool pin(const std::filesystem::path& dir, const std::vector<std::string>& names, uid_t owner);

  // "ipc:///proc/self/fd/N" for the i-th pinned socket.
  [[nodiscard]] std::string endpoint(std::size_t i) const;

  void reset();

 private:
  std::vector<sandboxing::unique_fd> fds_;
};

}  // namespace sandgate::gateway
