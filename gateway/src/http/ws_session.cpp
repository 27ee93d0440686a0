#include "ws_session.hpp"

#include "../kernels/kernel.hpp"
#include "../util/metrics.hpp"

#include <gateway/log.hpp>
#include <jupyter_protocol/websocket.hpp>

#include <boost/beast/websocket/ssl.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <utility>
#include <vector>

namespace sandgate::gateway {
namespace beast = boost::beast;

namespace {
constexpr std::size_t trim_threshold_bytes = 8 * 1024 * 1024;

struct close_waits {
  std::size_t in_flight = 0;
  std::vector<std::function<void()>> waiters;
};

close_waits& pending_closes() {
  static close_waits waits;
  return waits;
}
}  // namespace
namespace websocket = beast::websocket;

close_in_flight::close_in_flight() {
  ++pending_closes().in_flight;
}

close_in_flight::~close_in_flight() {
  auto& waits = pending_closes();
  if (--waits.in_flight != 0) return;
  for (auto& done : std::exchange(waits.waiters, {}))
    done();
}

void when_closes_sent(boost::asio::io_context& io, std::chrono::milliseconds deadline,
                      std::function<void()> done) {
  auto once = std::make_shared<std::function<void()>>(std::move(done));
  auto fire = [once] {
    if (*once) std::exchange(*once, nullptr)();
  };
  if (pending_closes().in_flight == 0) return boost::asio::post(io, fire);
  // Once done has run (the deadline came first), a late close posts nothing:
  // the loop may be gone by then.
  pending_closes().waiters.push_back([&io, fire, once] {
    if (*once) boost::asio::post(io, fire);
  });
  auto timer = std::make_shared<boost::asio::steady_timer>(io, deadline);
  timer->async_wait([timer, fire](const boost::system::error_code&) { fire(); });
}

template <class Stream>
ws_session<Stream>::ws_session(Stream&& stream, std::shared_ptr<kernel> k, std::string session_id,
                               std::string principal, bool v1, ws_limits limits, memory_release& memory,
                               connection_table::slot place)
    : ws_(std::move(stream)),
      kernel_(std::move(k)),
      session_id_(std::move(session_id)),
      principal_(std::move(principal)),
      v1_(v1),
      limits_(limits),
      memory_(memory),
      stall_timer_(ws_.get_executor()),
      close_timer_(ws_.get_executor()),
      place_(std::move(place)) {}

template <class Stream>
void ws_session<Stream>::run(beast::http::request<beast::http::string_body> req) {
  beast::get_lowest_layer(ws_).expires_never();
  auto timeouts = websocket::stream_base::timeout::suggested(beast::role_type::server);
  timeouts.handshake_timeout = limits_.handshake_timeout;
  ws_.set_option(timeouts);
  ws_.read_message_max(limits_.message_bytes);
  ws_.auto_fragment(false);
  const bool v1 = v1_;
  ws_.set_option(websocket::stream_base::decorator([v1](websocket::response_type& res) {
    res.set(beast::http::field::server, "sandgate");
    if (v1) res.set(beast::http::field::sec_websocket_protocol, protocol::v1_subprotocol);
  }));
  ws_.async_accept(req, [self = this->shared_from_this()](beast::error_code ec) { self->on_accept(ec); });
}

template <class Stream>
void ws_session<Stream>::on_accept(beast::error_code ec) {
  if (ec) {
    if (ec == beast::error::timeout) ++gateway_metrics().connection_timeouts["websocket_handshake"];
    log::info("websocket_handshake_failed", {{"kernel_id", kernel_->id()}, {"error", ec.message()}});
    return;
  }
  open_ = true;
  log::info("websocket_open", {{"kernel_id", kernel_->id()},
                               {"session_id", session_id_},
                               {"protocol", v1_ ? protocol::v1_subprotocol : "legacy"}});
  kernel_->join(this->shared_from_this());
  do_read();
}

template <class Stream>
void ws_session<Stream>::do_read() {
  ws_.async_read(buffer_, [self = this->shared_from_this()](beast::error_code ec, std::size_t n) {
    self->on_read(ec, n);
  });
}

template <class Stream>
void ws_session<Stream>::on_read(beast::error_code ec, std::size_t) {
  if (ec) {
    if (ec != websocket::error::closed && ec != boost::asio::error::operation_aborted)
      log::info("websocket_read_ended", {{"kernel_id", kernel_->id()}, {"error", ec.message()}});
    return end(ec == websocket::error::closed);
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
  if (kernel_->from_client(this->shared_from_this(), ch, std::move(msg)))
    do_read();
  else
    reading_paused_ = true;  // until resume_input(): the client's next messages wait in its connection
}

template <class Stream>
void ws_session<Stream>::resume_input() {
  if (!reading_paused_) return;
  reading_paused_ = false;
  if (ended_ || closing_) return;
  do_read();
}

template <class Stream>
void ws_session<Stream>::deliver(const std::shared_ptr<outgoing>& out) {
  if (!open_ || closing_) return;
  auto frame = v1_ ? out->v1() : out->legacy();
  queued_bytes_ += frame->size();
  peak_queued_bytes_ = std::max(peak_queued_bytes_, queued_bytes_);
  queue_.push_back({out, std::move(frame)});
  if (queued_bytes_ > limits_.hold_bytes && !holding_) hold_kernel();
  if (queued_bytes_ > limits_.queue_bytes)
    return close_too_slow("output queue over " + std::to_string(limits_.queue_bytes) + " bytes");
  if (!writing_) do_write();
}

// Frames go out one at a time through Beast. A frame alone in the queue,
// with nothing batched, is written at once: the last message of a reply
// leaves before the work that follows its relay. When others wait behind it
// (or a batch is open), one that fits goes into the batch and completes at
// once, so the frames waiting follow it there; once no more wait (or one
// does not fit), the batch goes out in one write.
template <class Stream>
void ws_session<Stream>::do_write() {
  if (ended_ && !closing_) return;
  auto& wire = ws_.next_layer();
  if (queue_.empty() || ended_) {
    if (!batched_.empty()) return flush();
    if (closing_) do_close();
    return;
  }
  in_flight_ = queue_.front();
  const auto& frame = *in_flight_.frame;
  constexpr std::size_t frame_header_max = 14;
  const bool others = queue_.size() > 1 || !batched_.empty();
  in_flight_batched_ =
      others && wire.batched_bytes() + frame.size() + frame_header_max <= limits_.batch_bytes;
  if (!in_flight_batched_ && !batched_.empty()) {
    in_flight_ = {};
    return flush();
  }
  writing_ = true;
  in_flight_buffers_.clear();
  in_flight_buffers_.emplace_back(frame.data.data(), frame.data.size());
  for (const auto part : frame.tail)
    in_flight_buffers_.emplace_back(part.data(), part.size());
  // Stays on until the write completes: Beast may start it later, behind a
  // frame of its own.
  wire.batch(in_flight_batched_);
  const auto batched_before = wire.batched_bytes();
  ws_.binary(frame.binary);
  ws_.async_write(in_flight_buffers_, [self = this->shared_from_this()](beast::error_code ec, std::size_t n) {
    self->on_write(ec, n);
  });
  in_flight_taken_ = wire.batched_bytes() > batched_before;
}

template <class Stream>
void ws_session<Stream>::on_write(beast::error_code ec, std::size_t) {
  writing_ = false;
  ws_.next_layer().batch(false);
  auto written = std::exchange(in_flight_, {});
  if (ec) return end();
  if (in_flight_batched_) batched_.push_back(std::move(written));
  if (!ended_) {
    ++writes_;
    queued_bytes_ -= queue_.front().frame->size();
    queue_.pop_front();
    if (holding_ && queued_bytes_ <= limits_.hold_bytes / 4) release_kernel();
    if (queue_.empty() && peak_queued_bytes_ > trim_threshold_bytes) {
      // A burst of output is out: its pages go back once output stays quiet,
      // so RSS does not stay at the peak.
      peak_queued_bytes_ = 0;
      memory_.soon();
    }
  }
  do_write();
}

template <class Stream>
void ws_session<Stream>::flush() {
  writing_ = true;
  ws_.next_layer().async_flush(
      [self = this->shared_from_this()](beast::error_code ec) { self->on_flush(ec); });
}

template <class Stream>
void ws_session<Stream>::on_flush(beast::error_code ec) {
  writing_ = false;
  if (ec) return end();
  batched_.clear();
  do_write();
}

template <class Stream>
void ws_session<Stream>::close(unsigned short code, std::string reason) {
  if (closing_ || !open_) return;
  closing_ = true;
  close_in_flight_ = std::make_unique<close_in_flight>();
  close_reason_ = websocket::close_reason(static_cast<websocket::close_code>(code), reason);
  end();  // detach now: what is unsent and what follows waits in the kernel's replay buffer
  if (!writing_) return do_close();
  // The close frame goes after the write in flight; a client that reads
  // nothing would keep both waiting, so its connection is dropped instead.
  close_timer_.expires_after(limits_.close_timeout);
  close_timer_.async_wait([self = this->shared_from_this()](const boost::system::error_code& ec) {
    if (ec || !self->close_in_flight_) return;
    log::info("websocket_dropped", {{"kernel_id", self->kernel_->id()}, {"why", "close not sent in time"}});
    beast::close_socket(beast::get_lowest_layer(self->ws_));
    self->close_in_flight_.reset();
  });
}

template <class Stream>
void ws_session<Stream>::hold_kernel() {
  holding_ = true;
  kernel_->hold_output();
  watch_stall(writes_);
}

template <class Stream>
void ws_session<Stream>::release_kernel() {
  holding_ = false;
  stall_timer_.cancel();
  kernel_->release_output();
}

// While the client holds the kernel back, it must take in at least one
// frame per stall_timeout: a slow client slows the kernel down, a stalled
// one is closed so the kernel and its other clients go on.
template <class Stream>
void ws_session<Stream>::watch_stall(std::uint64_t writes_seen) {
  stall_timer_.expires_after(limits_.stall_timeout);
  stall_timer_.async_wait(
      [self = this->shared_from_this(), writes_seen](const boost::system::error_code& ec) {
        if (ec || !self->holding_ || self->ended_) return;
        if (self->writes_ != writes_seen) return self->watch_stall(self->writes_);
        self->close_too_slow("it read no output for " +
                             std::to_string(self->limits_.stall_timeout.count() / 1000) + " s");
      });
}

template <class Stream>
void ws_session<Stream>::close_too_slow(const std::string& why) {
  log::warn("websocket_too_slow", {{"kernel_id", kernel_->id()}, {"session_id", session_id_}, {"why", why}});
  ++gateway_metrics().clients_too_slow;
  close(1008, "client too slow: " + why);
}

template <class Stream>
void ws_session<Stream>::do_close() {
  ws_.async_close(close_reason_, [self = this->shared_from_this()](beast::error_code) {
    self->close_in_flight_.reset();
    self->close_timer_.cancel();
  });
}

template <class Stream>
void ws_session<Stream>::end(bool written_arrives) {
  if (ended_) return;
  ended_ = true;
  std::vector<std::shared_ptr<outgoing>> unsent;
  // What is batched goes out before a close frame, the gateway's or Beast's
  // reply to the client's: it is sent, not unsent. So is the frame being
  // written when the gateway closes, and when the client closed once it is
  // in the batch (a write Beast held back behind its close reply fails).
  // When the connection broke, none of it may have arrived, so it waits for
  // the session's return.
  const bool written_goes_out = closing_ || written_arrives;
  const bool in_flight_goes_out = in_flight_.frame && (closing_ || (written_arrives && in_flight_taken_));
  if (!written_goes_out) {
    for (auto& b : batched_)
      unsent.push_back(std::move(b.message));
    batched_.clear();
    ws_.next_layer().discard_batch();
  }
  for (auto& q : queue_) {
    if (in_flight_goes_out && &q == &queue_.front()) continue;
    unsent.push_back(std::move(q.message));
  }
  queue_.clear();
  queued_bytes_ = 0;
  if (holding_) release_kernel();
  kernel_->leave(this->shared_from_this(), unsent);
  log::info("websocket_closed", {{"kernel_id", kernel_->id()}, {"session_id", session_id_}});
}

template class ws_session<plain_stream>;
template class ws_session<tls_stream>;

}  // namespace sandgate::gateway
