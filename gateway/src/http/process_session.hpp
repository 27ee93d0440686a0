#pragma once
// One WebSocket on /api/sandboxes/{id}/processes/{pid}/attach: relays
// between the client and an attachment to the process (the socketpair end
// the supervisor made, sandboxing/process_stream.hpp). To the client: binary
// messages whose first byte is the stream (1 stdout, 2 stderr) and the bytes
// after it as the process wrote them; JSON text messages
// {"type":"attached",...} first and {"type":"exit",...} last, then a close
// (1000). From the client: binary messages 0 + stdin bytes; JSON text
// {"type":"close_stdin"}, {"type":"resize","cols","rows"},
// {"type":"signal","signal":"INT"}; anything else gets a {"type":"error"}
// message and changes nothing. Each direction is read only while the other
// side keeps up: a slow client holds the attachment (and, through the
// supervisor's ring, the process) back, never the gateway's memory.

#include "../sandboxes/sandbox_entry.hpp"
#include "connection_table.hpp"
#include "server.hpp"
#include "streams.hpp"

#include <sandboxing/process_stream.hpp>
#include <sandboxing/unique_fd.hpp>

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <array>
#include <deque>
#include <memory>
#include <string>

namespace sandgate::gateway {

template <class Stream>
class process_session final : public std::enable_shared_from_this<process_session<Stream>> {
 public:
  // `place`: the connection's place in the server's connection table, held while it is open.
  process_session(Stream&& stream, std::shared_ptr<sandbox_entry> sandbox, std::string process_id,
                  sandboxing::unique_fd attachment, ws_limits limits, connection_table::slot place);

  // Completes the handshake for `req` and starts relaying.
  void run(boost::beast::http::request<boost::beast::http::string_body> req);

 private:
  void on_accept(boost::beast::error_code ec);
  // attachment -> client
  void read_attachment();
  void on_attachment(const boost::system::error_code& ec, std::size_t n);
  void relay_frame(sandboxing::process_stream::frame f);
  void send_client(std::string payload, bool binary);
  void do_write();
  // client -> attachment
  void read_client();
  void on_client(boost::beast::error_code ec, std::size_t n);
  void client_message(std::string_view data, bool binary);
  void client_error(const std::string& message);
  void send_attachment(sandboxing::process_stream::frame_kind kind, std::string_view payload);
  void write_attachment();
  // Closes the WebSocket once what is queued went out.
  void finish(boost::beast::websocket::close_code code, const std::string& reason);
  void stop();

  boost::beast::websocket::stream<Stream> ws_;
  boost::asio::local::stream_protocol::socket attachment_;
  std::shared_ptr<sandbox_entry> sandbox_;
  std::string process_id_;
  ws_limits limits_;
  boost::beast::flat_buffer client_buffer_;
  std::array<char, 256 * 1024> attachment_buffer_{};
  sandboxing::process_stream::frame_decoder decoder_;
  struct out_message {
    std::string payload;
    bool binary = false;
  };
  std::deque<out_message> to_client_;
  std::size_t to_client_bytes_ = 0;
  std::string to_attachment_;       // framed stdin and controls not yet written
  std::string attachment_writing_;  // what the write in flight holds
  bool writing_client_ = false;
  bool reading_attachment_ = false;
  bool reading_client_ = false;
  bool exited_ = false;   // the process's exit went to the client
  bool closing_ = false;  // a close is queued behind the output
  boost::beast::websocket::close_reason close_reason_;
  connection_table::slot place_;
};

extern template class process_session<plain_stream>;
extern template class process_session<tls_stream>;

}  // namespace sandgate::gateway
