// A pipe whose two ends are owned descriptors.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include <sandboxing/unique_fd.hpp>

namespace sandgate::kernels {

using sandboxing::unique_fd;

struct pipe_pair {
  unique_fd read_end;
  unique_fd write_end;
};

// A pipe with O_CLOEXEC on both ends; throws std::system_error on failure.
inline pipe_pair make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw std::system_error(errno, std::generic_category(), "pipe2(O_CLOEXEC)");
  }
  return {unique_fd(fds[0]), unique_fd(fds[1])};
}

}  // namespace sandgate::kernels
