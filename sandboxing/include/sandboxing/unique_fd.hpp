// A move-only owner of one file descriptor.
#pragma once

#include <unistd.h>

#include <utility>

namespace sandgate::sandboxing {

class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) noexcept : fd_(fd) {}
  unique_fd(unique_fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  unique_fd& operator=(unique_fd&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd() { reset(); }

  // The descriptor, still owned by this object; -1 when empty.
  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }
  // Gives up ownership without closing.
  int release() noexcept { return std::exchange(fd_, -1); }
  // Closes now and reports what close(2) returned (0, or -1 with errno set):
  // for writes whose loss only close reports.
  int close() noexcept { return fd_ >= 0 ? ::close(std::exchange(fd_, -1)) : 0; }
  // Closes the current descriptor (if any) and takes ownership of fd.
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace sandgate::sandboxing
