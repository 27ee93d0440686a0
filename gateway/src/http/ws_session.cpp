#include "ws_session.hpp"

#include "../kernels/kernel.hpp"

#include <gateway/log.hpp>
#include <jupyter_protocol/websocket.hpp>

namespace sandgate::gateway {
namespace beast = boost::beast;
namespace websocket = beast::websocket;

ws_session::ws_session(beast::tcp_stream&& stream, std::shared_ptr<kernel> k, std::string session_id, bool v1,
                       ws_limits limits)
    : ws_(std::move(stream)),
      kernel_(std::move(k)),
      session_id_(std::move(session_id)),
      v1_(v1),
      limits_(limits) {}

void ws_session::run(beast::http::request<beast::http::string_body> req) {
  beast::get_lowest_layer(ws_).expires_never();
  ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
  ws_.read_message_max(limits_.message_bytes);
  ws_.auto_fragment(false);
  const bool v1 = v1_;
  ws_.set_option(websocket::stream_base::decorator([v1](websocket::response_type& res) {
    res.set(beast::http::field::server, "sandgate");
    if (v1) res.set(beast::http::field::sec_websocket_protocol, protocol::v1_subprotocol);
  }));
  ws_.async_accept(req, [self = shared_from_this()](beast::error_code ec) { self->on_accept(ec); });
}

void ws_session::on_accept(beast::error_code ec) {
  if (ec) {
    log::info("websocket_handshake_failed", {{"kernel_id", kernel_->id()}, {"error", ec.message()}});
    return;
  }
  open_ = true;
  log::info("websocket_open", {{"kernel_id", kernel_->id()},
                               {"session_id", session_id_},
                               {"protocol", v1_ ? protocol::v1_subprotocol : "legacy"}});
  kernel_->attach(shared_from_this());
  do_read();
}

void ws_session::do_read() {
  ws_.async_read(buffer_,
                 [self = shared_from_this()](beast::error_code ec, std::size_t n) { self->on_read(ec, n); });
}

void ws_session::on_read(beast::error_code ec, std::size_t) {
  if (ec) {
    if (ec != websocket::error::closed && ec != boost::asio::error::operation_aborted)
      log::info("websocket_read_ended", {{"kernel_id", kernel_->id()}, {"error", ec.message()}});
    return end();
  }
  const auto data = beast::buffers_to_string(buffer_.data());
  buffer_.consume(buffer_.size());
  protocol::channel ch{};
  protocol::message msg;
  const auto err =
      v1_ ? protocol::decode_v1(data, ch, msg) : protocol::decode_legacy(data, ws_.got_binary(), ch, msg);
  if (err) {
    log::warn("websocket_message_rejected", {{"kernel_id", kernel_->id()}, {"error", err.message()}});
    close(1007, "invalid Jupyter message: " + err.message());
    return;
  }
  kernel_->from_client(shared_from_this(), ch, std::move(msg));
  do_read();
}

void ws_session::deliver(const std::shared_ptr<outgoing>& out) {
  if (!open_ || closing_) return;
  auto frame = v1_ ? out->v1() : out->legacy();
  queued_bytes_ += frame->data.size();
  queue_.push_back({out, std::move(frame)});
  if (queued_bytes_ > limits_.queue_bytes) {
    log::warn("websocket_too_slow", {{"kernel_id", kernel_->id()}, {"session_id", session_id_}});
    close(1008, "client too slow: output queue over " + std::to_string(limits_.queue_bytes) + " bytes");
    return;
  }
  if (!writing_) do_write();
}

void ws_session::do_write() {
  if (ended_ && !closing_) return;
  if (queue_.empty()) {
    if (closing_) do_close();
    return;
  }
  writing_ = true;
  in_flight_ = queue_.front().frame;  // outlives the queue entry if the client ends meanwhile
  ws_.binary(in_flight_->binary);
  ws_.async_write(
      boost::asio::buffer(in_flight_->data),
      [self = shared_from_this()](beast::error_code ec, std::size_t n) { self->on_write(ec, n); });
}

void ws_session::on_write(beast::error_code ec, std::size_t) {
  writing_ = false;
  in_flight_.reset();
  if (ec) return end();
  if (ended_) {
    if (closing_) do_close();
    return;
  }
  queued_bytes_ -= queue_.front().frame->data.size();
  queue_.pop_front();
  do_write();
}

void ws_session::close(unsigned short code, std::string reason) {
  if (closing_ || !open_) return;
  closing_ = true;
  close_reason_ = websocket::close_reason(static_cast<websocket::close_code>(code), reason);
  end();  // detach now: what is unsent and what follows waits in the kernel's replay buffer
  if (!writing_) do_close();
}

void ws_session::do_close() {
  ws_.async_close(close_reason_, [self = shared_from_this()](beast::error_code) {});
}

void ws_session::end() {
  if (ended_) return;
  ended_ = true;
  std::vector<std::shared_ptr<outgoing>> unsent;
  for (auto& q : queue_)
    unsent.push_back(std::move(q.message));
  queue_.clear();
  queued_bytes_ = 0;
  kernel_->detach(shared_from_this(), std::move(unsent));
  log::info("websocket_closed", {{"kernel_id", kernel_->id()}, {"session_id", session_id_}});
}

}  // namespace sandgate::gateway
