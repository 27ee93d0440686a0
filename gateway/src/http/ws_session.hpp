#pragma once
// One WebSocket on /api/kernels/{id}/channels: decodes client frames (legacy
// JSON or v1.kernel.websocket.jupyter.org) into messages for the kernel, and
// writes the kernel's messages back through a queue bounded in bytes. A
// client that falls behind holds the kernel's output back until it catches
// up; one that reads nothing for too long, or whose queue passes its bound
// all the same, is closed, and its session_id's output then waits in the
// kernel's replay buffer.

#include "../bridge/outgoing.hpp"
#include "../util/memory_release.hpp"
#include "batched_writes.hpp"
#include "connection_table.hpp"
#include "server.hpp"
#include "streams.hpp"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>

namespace sandgate::gateway {

class kernel;

// Calls `done` once every WebSocket close begun so far has gone out (or its
// connection failed), or after `deadline`, whichever comes first. A stopping
// gateway waits on it so its clients read their close codes instead of a
// dropped connection.
void when_closes_sent(boost::asio::io_context& io, std::chrono::milliseconds deadline,
                      std::function<void()> done);

// Held by a session from close() until its close frame is out.
class close_in_flight {
 public:
  close_in_flight();
  ~close_in_flight();
  close_in_flight(const close_in_flight&) = delete;
  close_in_flight& operator=(const close_in_flight&) = delete;
};

template <class Stream>
class ws_session final : public kernel_client, public std::enable_shared_from_this<ws_session<Stream>> {
 public:
  // `place`: the connection's place in the server's connection table, held
  // until the WebSocket ends.
  ws_session(Stream&& stream, std::shared_ptr<kernel> k, std::string session_id, std::string principal,
             bool v1, ws_limits limits, memory_release& memory, connection_table::slot place);

  // Completes the handshake for `req` and starts relaying.
  void run(boost::beast::http::request<boost::beast::http::string_body> req);

  [[nodiscard]] const std::string& session_id() const noexcept override { return session_id_; }
  [[nodiscard]] const std::string& principal() const noexcept override { return principal_; }
  void deliver(const std::shared_ptr<outgoing>& out) override;
  void close(unsigned short code, std::string reason) override;
  void resume_input() override;

 private:
  void on_accept(boost::beast::error_code ec);
  void do_read();
  void on_read(boost::beast::error_code ec, std::size_t bytes);
  void do_write();
  void on_write(boost::beast::error_code ec, std::size_t bytes);
  void flush();
  void on_flush(boost::beast::error_code ec);
  void do_close();
  // Detaches from the kernel, handing it what the client has not got.
  // `written_arrives`: what was written so far reaches the client, as when
  // it closed cleanly (Beast's close reply follows every frame written).
  void end(bool written_arrives = false);
  void hold_kernel();
  void release_kernel();
  void watch_stall(std::uint64_t writes_seen);
  void close_too_slow(const std::string& why);  // 1008, logged and counted

  boost::beast::websocket::stream<batched_writes<Stream>> ws_;
  boost::beast::flat_buffer buffer_;
  std::shared_ptr<kernel> kernel_;
  std::string session_id_;
  std::string principal_;
  bool v1_;
  ws_limits limits_;
  memory_release& memory_;
  struct queued {
    std::shared_ptr<outgoing> message;
    std::shared_ptr<const encoded_frame> frame;
  };
  std::deque<queued> queue_;
  std::size_t queued_bytes_ = 0;
  std::size_t peak_queued_bytes_ = 0;  // since the queue was last empty
  queued in_flight_;                   // outlives the queue entry if the client ends meanwhile
  bool in_flight_batched_ = false;     // in_flight_ goes into the batch
  bool in_flight_taken_ = false;       // and is in it (Beast may hold a write back behind its own)
  std::vector<queued> batched_;        // taken off the queue into the batch, not yet flushed
  std::vector<boost::asio::const_buffer> in_flight_buffers_;
  bool open_ = false;
  bool writing_ = false;  // a frame or a flush is going out
  bool closing_ = false;
  bool ended_ = false;
  bool holding_ = false;         // holds the kernel's output back (hold_kernel)
  bool reading_paused_ = false;  // the kernel's input is behind: no read is outstanding
  std::uint64_t writes_ = 0;     // frames written, to tell a slow client from a stalled one
  boost::asio::steady_timer stall_timer_;
  boost::asio::steady_timer close_timer_;
  boost::beast::websocket::close_reason close_reason_;
  std::unique_ptr<close_in_flight> close_in_flight_;
  connection_table::slot place_;
};

extern template class ws_session<plain_stream>;
extern template class ws_session<tls_stream>;

}  // namespace sandgate::gateway
