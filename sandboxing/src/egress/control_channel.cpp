#include "control_channel.hpp"

#include <boost/asio/write.hpp>

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace sandgate::egress {
namespace asio = boost::asio;

control_channel::control_channel(asio::io_context& io, int fd, message_handler on_message,
                                 close_handler on_close)
    : socket_(io), on_message_(std::move(on_message)), on_close_(std::move(on_close)) {
  socket_.assign(asio::local::stream_protocol(), fd);
}

void control_channel::start() {
  do_read();
}

void control_channel::do_read() {
  socket_.async_wait(asio::socket_base::wait_read, [this](const boost::system::error_code& ec) {
    if (ec || !read_available()) return on_close_();
    for (;;) {
      std::error_code frame_ec;
      auto message = decoder_.next(frame_ec);
      if (frame_ec) return on_close_();
      if (!message) break;
      on_message_(*message);
    }
    do_read();
  });
}

bool control_channel::read_available() {
  constexpr std::size_t max_descriptors = 16;  // per read: the gateway sends one per frame
  for (;;) {
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * max_descriptors)];
    iovec io{buf_.data(), buf_.size()};
    msghdr msg{};
    msg.msg_iov = &io;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(socket_.native_handle(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int fd = -1;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        descriptors_.emplace_back(fd);
      }
    }
    if (msg.msg_flags & MSG_CTRUNC) return false;  // descriptors were lost: the gateway sends too many
    if (n == 0) return false;
    decoder_.feed(std::string_view(buf_.data(), static_cast<std::size_t>(n)));
  }
}

sandboxing::unique_fd control_channel::take_descriptor() {
  if (descriptors_.empty()) return {};
  auto fd = std::move(descriptors_.front());
  descriptors_.pop_front();
  return fd;
}

void control_channel::send(const nlohmann::json& message) {
  std::string frame;
  try {
    frame = sandboxing::control::encode_frame(message);
  } catch (const std::exception&) {
    return;
  }
  if (queued_bytes_ + frame.size() > (64u << 20)) return;
  queued_bytes_ += frame.size();
  queue_.push_back(std::move(frame));
  if (!writing_) do_write();
}

void control_channel::do_write() {
  if (queue_.empty()) {
    writing_ = false;
    return;
  }
  writing_ = true;
  asio::async_write(socket_, asio::buffer(queue_.front()),
                    [this](const boost::system::error_code& ec, std::size_t) {
                      if (ec) return on_close_();
                      queued_bytes_ -= queue_.front().size();
                      queue_.pop_front();
                      do_write();
                    });
}

}  // namespace sandgate::egress
