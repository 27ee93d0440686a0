#include "sandboxing/control_connection.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace sandgate::sandboxing {

bool control_connection::read_some() {
  char buffer[16384];
  for (;;) {
    const ssize_t n = ::recv(fd_.get(), buffer, sizeof buffer, 0);
    if (n > 0) {
      decoder_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
      if (decoder_.buffered_bytes() > control::max_frame_bytes + 4) return true;  // next_message reports it
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

std::optional<nlohmann::json> control_connection::next_message() {
  std::error_code ec;
  auto message = decoder_.next(ec);
  if (ec) broken_ = true;
  return message;
}

void control_connection::send(const nlohmann::json& message) {
  if (broken_) return;
  pending_ += control::encode_frame(message);
  if (pending_.size() > max_pending_bytes) {
    broken_ = true;
    return;
  }
  if (!flush()) broken_ = true;
}

bool control_connection::flush() {
  while (!pending_.empty()) {
    const ssize_t n = ::send(fd_.get(), pending_.data(), pending_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      pending_.erase(0, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
  return true;
}

void control_connection::drain(int timeout_ms) {
  while (!pending_.empty() && !broken_) {
    pollfd p{fd_.get(), POLLOUT, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return;
    if (!flush()) return;
  }
}

}  // namespace sandgate::sandboxing
