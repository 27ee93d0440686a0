#include "control_channel.hpp"

#include <boost/asio/write.hpp>

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
  socket_.async_read_some(asio::buffer(buf_), [this](const boost::system::error_code& ec, std::size_t n) {
    if (ec) return on_close_();
    decoder_.feed(std::string_view(buf_.data(), n));
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
