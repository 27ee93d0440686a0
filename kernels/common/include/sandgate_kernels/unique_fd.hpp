// Move-only owner of a file descriptor.
#pragma once

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <system_error>
#include <utility>

namespace sandgate::kernels {

class unique_fd {
 public:
  unique_fd() noexcept = default;
  explicit unique_fd(int fd) noexcept : fd_(fd) {}
  ~unique_fd() { reset(); }

  unique_fd(unique_fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  unique_fd& operator=(unique_fd&& other) noexcept {
    if (this != &other) {
      reset(std::exchange(other.fd_, -1));
    }
    return *this;
  }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;

  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }

  // Closes the current descriptor (if any) and takes ownership of fd.
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// A pipe with O_CLOEXEC on both ends; throws std::system_error on failure.
struct pipe_pair {
  unique_fd read_end;
  unique_fd write_end;
};

inline pipe_pair make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw std::system_error(errno, std::generic_category(), "pipe2(O_CLOEXEC)");
  }
  return {unique_fd(fds[0]), unique_fd(fds[1])};
}

}  // namespace sandgate::kernels
