#include "ws_connection.hpp"

#include <boost/asio/connect.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/websocket.hpp>

#include <sys/socket.h>
#include <sys/time.h>

#include <cstdint>
#include <vector>

namespace sandgate::bench {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

constexpr std::size_t max_message_bytes = 1024ull * 1024 * 1024;

std::uint64_t read_u64_le(std::string_view data, std::size_t pos) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i)
    value = (value << 8) | static_cast<unsigned char>(data[pos + static_cast<std::size_t>(i)]);
  return value;
}

// The v1 layout, checked, with only header and parent_header parsed: the
// client needs routing fields, not a validated body (a browser does not
// validate content either before handing it on).
received decode_v1_light(std::string_view data) {
  if (data.size() < 8) throw bench_error("v1 frame too short");
  const std::uint64_t count = read_u64_le(data, 0);
  if (count < 6 || count > data.size() / 8 - 1) throw bench_error("v1 frame: bad offset count");
  std::vector<std::size_t> offsets(count);
  for (std::size_t i = 0; i < count; ++i) {
    offsets[i] = read_u64_le(data, 8 * (i + 1));
    if (offsets[i] > data.size() || (i > 0 && offsets[i] < offsets[i - 1]))
      throw bench_error("v1 frame: bad offsets");
  }
  const auto part = [&](std::size_t i) { return data.substr(offsets[i], offsets[i + 1] - offsets[i]); };
  received r;
  const auto ch = protocol::parse_channel(part(0));
  if (!ch) throw bench_error("v1 frame: unknown channel");
  r.channel = *ch;
  auto& m = r.message;
  m.header = part(1);
  m.parent_header = part(2);
  m.metadata = part(3);
  m.content = part(4);
  for (std::size_t i = 5; i + 1 < count; ++i)
    m.buffers.emplace_back(part(i));
  if (protocol::parse_header(m.header, m.head, true) ||
      protocol::parse_header(m.parent_header.empty() ? "{}" : m.parent_header, m.parent, false))
    throw bench_error("v1 frame: bad header");
  return r;
}

}  // namespace

ws_connection::ws_connection(const ws_endpoint& ep, std::string session)
    : kernel_connection(std::move(session)), ws_(io_), v1_(ep.v1) {
  tcp::resolver resolver(io_);
  asio::connect(ws_.next_layer(), resolver.resolve(ep.host, ep.port));
  ws_.next_layer().set_option(tcp::no_delay(true));
  ws_.read_message_max(max_message_bytes);
  ws_.auto_fragment(false);
  const std::string token = ep.token;
  const bool v1 = ep.v1;
  ws_.set_option(websocket::stream_base::decorator([token, v1](websocket::request_type& req) {
    if (!token.empty()) req.set(beast::http::field::authorization, "token " + token);
    if (v1) req.set(beast::http::field::sec_websocket_protocol, protocol::v1_subprotocol);
  }));
  websocket::response_type res;
  set_timeout(ep.handshake_timeout);
  beast::error_code ec;
  ws_.handshake(res, ep.host + ":" + ep.port, ep.target, ec);
  if (ec) throw bench_error("websocket handshake " + ep.target + ": " + ec.message());
  if (v1 && res[beast::http::field::sec_websocket_protocol] != protocol::v1_subprotocol)
    throw bench_error("the server did not accept " + std::string(protocol::v1_subprotocol));
}

ws_connection::~ws_connection() {
  if (broken_) return;
  beast::error_code ec;
  set_timeout(std::chrono::milliseconds(2000));
  ws_.close(websocket::close_code::normal, ec);
}

void ws_connection::send(protocol::channel ch, const protocol::message& msg) {
  if (broken_) throw bench_error("websocket broken by an earlier timeout");
  if (v1_) {
    const auto data = protocol::encode_v1(ch, msg);
    ws_.binary(true);
    ws_.write(asio::buffer(data));
  } else {
    const auto frame = protocol::encode_legacy(ch, msg);
    ws_.binary(frame.binary);
    ws_.write(asio::buffer(frame.data));
  }
}

void ws_connection::set_timeout(std::chrono::milliseconds timeout) {
  if (timeout == timeout_) return;
  timeout_ = timeout;
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(ws_.next_layer().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

std::optional<received> ws_connection::receive(std::chrono::milliseconds timeout) {
  if (broken_) throw bench_error("websocket broken by an earlier timeout");
  set_timeout(timeout);
  beast::error_code ec;
  buffer_.clear();
  ws_.read(buffer_, ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again || ec == asio::error::timed_out) {
    broken_ = true;
    return std::nullopt;
  }
  if (ec) throw bench_error("websocket read: " + ec.message());
  const auto* p = static_cast<const char*>(buffer_.data().data());
  return decode(std::string_view(p, buffer_.size()), ws_.got_binary());
}

received ws_connection::decode(std::string_view data, bool binary) const {
  if (v1_) return decode_v1_light(data);
  received r;
  if (auto ec = protocol::decode_legacy(data, binary, r.channel, r.message))
    throw bench_error("legacy frame: " + ec.message());
  return r;
}

}  // namespace sandgate::bench
