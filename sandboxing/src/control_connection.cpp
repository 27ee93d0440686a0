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
  after_queue();
}

void control_connection::send_output(std::string_view id, control::output_stream stream,
                                     std::string_view data) {
  if (broken_) return;
  control::append_output_frame(pending_, id, stream, data);
  after_queue();
}

void control_connection::after_queue() {
  if (pending_bytes() > max_pending_bytes) {
    broken_ = true;
    return;
  }
  if (!flush()) broken_ = true;
}

bool control_connection::flush() {
  bool ok = true;
  while (pending_bytes() > 0) {
    const ssize_t n =
        ::send(fd_.get(), pending_.data() + sent_, pending_bytes(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent_ += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    ok = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    break;
  }
  if (sent_ == pending_.size()) {
    pending_.clear();
    sent_ = 0;
    // A burst of output must not stay resident after it was sent.
    if (pending_.capacity() > (256u << 10)) std::string().swap(pending_);
  } else if (sent_ > (256u << 10)) {
    pending_.erase(0, sent_);
    sent_ = 0;
  }
  return ok;
}

void control_connection::drain(int timeout_ms) {
  while (pending_bytes() > 0 && !broken_) {
    pollfd p{fd_.get(), POLLOUT, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return;
    if (!flush()) return;
  }
}

}  // namespace sandgate::sandboxing
