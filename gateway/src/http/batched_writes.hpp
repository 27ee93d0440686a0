#pragma once
// The layer under a WebSocket that lets a burst of small frames go out in
// one write. Beast writes one message per operation and one operation at a
// time, so an execute's status busy, execute_input, execute_result, status
// idle and execute_reply cost five sends, and up to five wake-ups of the
// client. While batching is on, a write is copied into the batch and
// completes at once; async_flush() sends the batch in one write.
//
// Writes reach the next layer one at a time and in the order they were
// made: one made while another (or a flush) is going out waits for it, and
// one made while batching is off sends the batch before itself. So
// Beast's own frames (pong, ping, close) never overtake or cut into a batch,
// and a WebSocket close writes what is batched before the connection is
// torn down.

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/role.hpp>
#include <boost/beast/websocket/teardown.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sandgate::gateway {

template <class NextLayer>
class batched_writes {
 public:
  using next_layer_type = NextLayer;
  using executor_type = typename NextLayer::executor_type;

  template <class... Args>
  explicit batched_writes(Args&&... args) : next_(std::forward<Args>(args)...) {}

  [[nodiscard]] next_layer_type& next_layer() noexcept { return next_; }
  [[nodiscard]] const next_layer_type& next_layer() const noexcept { return next_; }
  [[nodiscard]] executor_type get_executor() noexcept { return next_.get_executor(); }

  // Whether the writes made from now on go into the batch.
  void batch(bool on) noexcept { batching_ = on; }
  [[nodiscard]] std::size_t batched_bytes() const noexcept { return batch_.size(); }
  // Drops what is batched and not yet flushing (its reader is gone).
  void discard_batch() noexcept { batch_.clear(); }
  // Writes made on the next layer so far, each flush counting one.
  [[nodiscard]] std::uint64_t writes() const noexcept { return writes_; }

  template <class MutableBuffers, class ReadToken>
  auto async_read_some(const MutableBuffers& buffers, ReadToken&& token) {
    return next_.async_read_some(buffers, std::forward<ReadToken>(token));
  }

  template <class ConstBuffers, class WriteToken>
  auto async_write_some(const ConstBuffers& buffers, WriteToken&& token) {
    return boost::asio::async_initiate<WriteToken, void(boost::beast::error_code, std::size_t)>(
        [this](auto handler, const ConstBuffers& data) {
          if (batching_) return take_in(data, std::move(handler));
          // What is batched was written first, so it goes out first.
          if (!batch_.empty()) enqueue(pending{std::exchange(batch_, {}), {}, nullptr});
          enqueue(pending{{},
                          {boost::asio::buffer_sequence_begin(data), boost::asio::buffer_sequence_end(data)},
                          write_handler(std::move(handler))});
        },
        token, buffers);
  }

  // Writes the batch (which may be empty) once every write made before is
  // out; completes with the error of that write.
  template <class FlushToken>
  auto async_flush(FlushToken&& token) {
    return boost::asio::async_initiate<FlushToken, void(boost::beast::error_code)>(
        [this](auto handler) {
          enqueue(
              pending{std::exchange(batch_, {}),
                      {},
                      write_handler([h = std::move(handler)](boost::beast::error_code ec,
                                                             std::size_t) mutable { std::move(h)(ec); })});
        },
        token);
  }

 private:
  // Never assigned, only constructed and moved: Boost 1.81's move
  // assignment of any_completion_handler recurses without end.
  using write_handler = boost::asio::any_completion_handler<void(boost::beast::error_code, std::size_t)>;
  struct pending {
    std::string bytes;                               // a batch being flushed
    std::vector<boost::asio::const_buffer> buffers;  // or the caller's buffers
    write_handler handler;
  };

  template <class ConstBuffers, class Handler>
  void take_in(const ConstBuffers& buffers, Handler handler) {
    const std::size_t n = boost::asio::buffer_size(buffers);
    const std::size_t at = batch_.size();
    batch_.resize(at + n);
    boost::asio::buffer_copy(boost::asio::buffer(batch_.data() + at, n), buffers);
    const auto ex = boost::asio::get_associated_executor(handler, get_executor());
    boost::asio::post(ex,
                      boost::beast::bind_front_handler(std::move(handler), boost::beast::error_code{}, n));
  }

  void enqueue(pending p) {
    queue_.push_back(std::move(p));
    write_next();
  }

  void write_next() {
    if (writing_ || queue_.empty()) return;
    writing_ = true;
    // On the heap, so the buffers stay put while the handler that owns them moves.
    auto p = std::make_unique<pending>(std::move(queue_.front()));
    queue_.pop_front();
    if (!p->bytes.empty()) p->buffers = {boost::asio::buffer(p->bytes)};
    const auto& buffers = p->buffers;
    const bool empty = boost::asio::buffer_size(buffers) == 0;
    auto done = [this, p = std::move(p)](boost::beast::error_code ec, std::size_t n) mutable {
      writing_ = false;
      write_next();
      if (p->handler) std::move(p->handler)(ec, n);
    };
    if (empty) {
      // Nothing to send (an empty flush): the next layer is not asked to.
      boost::asio::post(get_executor(), boost::beast::bind_front_handler(
                                            std::move(done), boost::beast::error_code{}, std::size_t{0}));
      return;
    }
    ++writes_;
    boost::asio::async_write(next_, buffers, std::move(done));
  }

  NextLayer next_;
  bool batching_ = false;
  std::string batch_;
  std::deque<pending> queue_;  // writes waiting for the one going out
  bool writing_ = false;
  std::uint64_t writes_ = 0;
};

// Beast's close ends with a teardown of the next layer: what is batched or
// waiting goes out first.
template <class NextLayer, class TeardownHandler>
void async_teardown(boost::beast::role_type role, batched_writes<NextLayer>& stream,
                    TeardownHandler&& handler) {
  stream.async_flush(
      [&stream, role, h = std::forward<TeardownHandler>(handler)](boost::beast::error_code) mutable {
        using boost::beast::websocket::async_teardown;
        async_teardown(role, stream.next_layer(), std::move(h));
      });
}

// The synchronous close is not used with batching: nothing can be batched.
template <class NextLayer>
void teardown(boost::beast::role_type role, batched_writes<NextLayer>& stream, boost::beast::error_code& ec) {
  using boost::beast::websocket::teardown;
  teardown(role, stream.next_layer(), ec);
}

}  // namespace sandgate::gateway
