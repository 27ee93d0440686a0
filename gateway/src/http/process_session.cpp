#include "process_session.hpp"

#include "../sandboxes/process_spec.hpp"

#include <gateway/log.hpp>

#include <boost/asio/write.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <nlohmann/json.hpp>

namespace sandgate::gateway {
namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace ps = sandboxing::process_stream;
using json = nlohmann::json;

namespace {

constexpr std::size_t client_high_water_bytes = 4u << 20;  // queued for the client: stop reading the process
constexpr std::size_t attachment_high_water_bytes = 1u << 20;  // stdin not yet taken: stop reading the client
constexpr std::size_t max_client_message_bytes = 4u << 20;     // a stdin message, with its stream byte

// The client's view of an attachment event.
json client_event(const json& e) {
  const std::string event = e.value("event", "");
  if (event == "attached")
    return {{"type", "attached"},
            {"process_id", e.value("id", "")},
            {"pty", e.value("pty", false)},
            {"running", e.value("running", false)},
            {"stdout", e.value("stdout", json::object())},
            {"stderr", e.value("stderr", json::object())}};
  if (event == "exit")
    return {{"type", "exit"},
            {"exit_code", e.value("code", json())},
            {"signal", e.value("signal", json())},
            {"oom", e.value("oom", false)},
            {"timed_out", e.value("timed_out", false)},
            {"stdout_bytes", e.value("stdout_bytes", 0)},
            {"stderr_bytes", e.value("stderr_bytes", 0)}};
  return nullptr;
}

}  // namespace

template <class Stream>
process_session<Stream>::process_session(Stream&& stream, std::shared_ptr<sandbox_entry> sandbox,
                                         std::string process_id, sandboxing::unique_fd attachment,
                                         ws_limits limits, connection_table::slot place)
    : ws_(std::move(stream)),
      attachment_(ws_.get_executor()),
      sandbox_(std::move(sandbox)),
      process_id_(std::move(process_id)),
      limits_(limits),
      place_(std::move(place)) {
  place_.busy();
  boost::system::error_code ec;
  attachment_.assign(boost::asio::local::stream_protocol(), attachment.release(), ec);
}

template <class Stream>
void process_session<Stream>::run(beast::http::request<beast::http::string_body> req) {
  beast::get_lowest_layer(ws_).expires_never();
  ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
  ws_.read_message_max(max_client_message_bytes);
  ws_.auto_fragment(false);  // a message goes out as one frame, not in write-buffer-sized pieces
  ws_.set_option(websocket::stream_base::decorator(
      [](websocket::response_type& res) { res.set(beast::http::field::server, "sandgate"); }));
  ws_.async_accept(req, [self = this->shared_from_this()](beast::error_code ec) { self->on_accept(ec); });
}

template <class Stream>
void process_session<Stream>::on_accept(beast::error_code ec) {
  if (ec) {
    log::info("websocket_handshake_failed", {{"process_id", process_id_}, {"error", ec.message()}});
    return stop();
  }
  log::info("process_attached", {{"sandbox_id", sandbox_->id}, {"process_id", process_id_}});
  read_attachment();
  read_client();
}

template <class Stream>
void process_session<Stream>::read_attachment() {
  if (reading_attachment_ || closing_ || to_client_bytes_ >= client_high_water_bytes ||
      !attachment_.is_open())
    return;
  reading_attachment_ = true;
  attachment_.async_read_some(
      boost::asio::buffer(attachment_buffer_),
      [self = this->shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
        self->on_attachment(ec, n);
      });
}

template <class Stream>
void process_session<Stream>::on_attachment(const boost::system::error_code& ec, std::size_t n) {
  reading_attachment_ = false;
  if (ec) {
    // The supervisor closes after the exit; without one, the process or its sandbox is gone.
    if (exited_) return finish(websocket::close_code::normal, "the process exited");
    return finish(websocket::close_code::going_away, "the process's record or its sandbox is gone");
  }
  decoder_.feed(std::string_view(attachment_buffer_.data(), n));
  bool bad = false;
  while (auto f = decoder_.next(bad))
    relay_frame(*f);
  if (bad) return finish(websocket::close_code::internal_error, "the supervisor sent a frame it should not");
  read_attachment();
}

template <class Stream>
void process_session<Stream>::relay_frame(ps::frame f) {
  switch (f.kind) {
    case ps::frame_kind::stdout_data:
    case ps::frame_kind::stderr_data: {
      std::string payload(1, static_cast<char>(f.kind));
      payload.append(f.payload);
      return send_client(std::move(payload), true);
    }
    case ps::frame_kind::event: {
      const json event = client_event(json::parse(f.payload, nullptr, false));
      if (event.is_null()) return;
      if (event["type"] == "exit") exited_ = true;
      return send_client(event.dump(), false);
    }
    default:
      return;
  }
}

template <class Stream>
void process_session<Stream>::send_client(std::string payload, bool binary) {
  to_client_bytes_ += payload.size();
  to_client_.push_back({std::move(payload), binary});
  do_write();
}

template <class Stream>
void process_session<Stream>::do_write() {
  if (writing_client_) return;
  if (to_client_.empty()) {
    if (closing_) {
      writing_client_ = true;
      ws_.async_close(close_reason_, [self = this->shared_from_this()](beast::error_code) { self->stop(); });
    }
    return;
  }
  writing_client_ = true;
  ws_.binary(to_client_.front().binary);
  ws_.async_write(boost::asio::buffer(to_client_.front().payload),
                  [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                    self->writing_client_ = false;
                    if (ec) return self->stop();
                    self->to_client_bytes_ -= self->to_client_.front().payload.size();
                    self->to_client_.pop_front();
                    self->do_write();
                    self->read_attachment();
                  });
}

template <class Stream>
void process_session<Stream>::read_client() {
  if (reading_client_ || closing_ ||
      to_attachment_.size() + attachment_writing_.size() >= attachment_high_water_bytes)
    return;
  reading_client_ = true;
  ws_.async_read(client_buffer_, [self = this->shared_from_this()](beast::error_code ec, std::size_t n) {
    self->on_client(ec, n);
  });
}

template <class Stream>
void process_session<Stream>::on_client(beast::error_code ec, std::size_t) {
  reading_client_ = false;
  if (ec) return stop();  // the client closed or went away: the process goes on
  const auto data = beast::buffers_to_string(client_buffer_.data());
  client_buffer_.consume(client_buffer_.size());
  sandbox_->touch();
  client_message(data, ws_.got_binary());
  read_client();
}

template <class Stream>
void process_session<Stream>::client_message(std::string_view data, bool binary) {
  if (binary) {
    if (data.empty() || data[0] != 0)
      return client_error("a binary message is 0 (stdin) followed by the bytes to write");
    return send_attachment(ps::frame_kind::stdin_data, data.substr(1));
  }
  const json m = json::parse(data, nullptr, false);
  const std::string type = m.is_object() ? m.value("type", "") : "";
  if (type == "close_stdin") return send_attachment(ps::frame_kind::control, R"({"op":"close_stdin"})");
  if (type == "resize") {
    const json cols = m.value("cols", json());
    const json rows = m.value("rows", json());
    if (!valid_terminal_size(cols) || !valid_terminal_size(rows))
      return client_error("resize: \"cols\" and \"rows\" must be integers from 1 to 10000");
    return send_attachment(ps::frame_kind::control,
                           json{{"op", "resize"}, {"cols", cols}, {"rows", rows}}.dump());
  }
  if (type == "signal") {
    const auto sig = signal_number(m.value("signal", json()));
    if (!sig) return client_error("signal: not a signal name (INT, TERM, KILL, HUP, ...) or number");
    return send_attachment(ps::frame_kind::control, json{{"op", "signal"}, {"signal", *sig}}.dump());
  }
  client_error("a text message is JSON with \"type\": close_stdin, resize or signal");
}

template <class Stream>
void process_session<Stream>::client_error(const std::string& message) {
  send_client(json{{"type", "error"}, {"message", message}}.dump(), false);
}

template <class Stream>
void process_session<Stream>::send_attachment(ps::frame_kind kind, std::string_view payload) {
  do {  // stdin larger than a frame goes in several
    const auto piece = payload.substr(0, ps::max_attach_payload_bytes);
    ps::append_frame(to_attachment_, kind, piece);
    payload.remove_prefix(piece.size());
  } while (!payload.empty());
  write_attachment();
}

template <class Stream>
void process_session<Stream>::write_attachment() {
  if (!attachment_writing_.empty() || to_attachment_.empty() || !attachment_.is_open()) return;
  attachment_writing_.swap(to_attachment_);
  boost::asio::async_write(
      attachment_, boost::asio::buffer(attachment_writing_),
      [self = this->shared_from_this()](const boost::system::error_code& ec, std::size_t) {
        self->attachment_writing_.clear();
        if (ec) return;  // the read side sees the end and closes
        self->write_attachment();
        self->read_client();
      });
}

template <class Stream>
void process_session<Stream>::finish(websocket::close_code code, const std::string& reason) {
  if (closing_) return;
  closing_ = true;
  close_reason_ = websocket::close_reason(code, reason);
  do_write();
}

template <class Stream>
void process_session<Stream>::stop() {
  boost::system::error_code ignored;
  attachment_.close(ignored);  // the supervisor drops the attachment; the process goes on
  closing_ = true;
  beast::get_lowest_layer(ws_).close();
}

template class process_session<plain_stream>;
template class process_session<tls_stream>;

}  // namespace sandgate::gateway
