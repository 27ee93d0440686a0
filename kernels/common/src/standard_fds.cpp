#include "sandgate_kernels/standard_fds.hpp"

#include <fcntl.h>
#include <cerrno>

namespace sandgate::kernels {

void ensure_standard_fds() noexcept {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
      // open() returns the lowest free descriptor: this one.
      ::open("/dev/null", O_RDWR);
    }
  }
}

}  // namespace sandgate::kernels
