#include "zmq_connection.hpp"

#include <jupyter_protocol/wire.hpp>

#include <vector>

namespace sandgate::bench {
using protocol::channel;

namespace {

void prepare(zmq::socket_t& s, const std::string& endpoint) {
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::rcvhwm, 0);
  s.set(zmq::sockopt::reconnect_ivl, 10);  // the kernel binds after we connect
  s.connect(endpoint);
}

}  // namespace

zmq_connection::zmq_connection(zmq::context_t& ctx, const protocol::connection_info& info,
                               std::string session)
    : kernel_connection(std::move(session)),
      signer_(info.key, info.signature_scheme),
      shell_(ctx, zmq::socket_type::dealer),
      control_(ctx, zmq::socket_type::dealer),
      iopub_(ctx, zmq::socket_type::sub) {
  iopub_.set(zmq::sockopt::subscribe, "");
  prepare(shell_, info.endpoint(channel::shell));
  prepare(control_, info.endpoint(channel::control));
  prepare(iopub_, info.endpoint(channel::iopub));
}

void zmq_connection::send(channel ch, const protocol::message& msg) {
  auto& socket = ch == channel::control ? control_ : shell_;
  const auto frames = protocol::encode(msg, signer_);
  for (std::size_t i = 0; i < frames.size(); ++i)
    socket.send(zmq::const_buffer(frames[i].data(), frames[i].size()),
                i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
}

received zmq_connection::read_from(zmq::socket_t& socket, channel ch) {
  std::vector<std::string> frames;
  zmq::message_t part;
  do {
    if (!socket.recv(part, zmq::recv_flags::none)) throw bench_error("zmq recv interrupted");
    frames.emplace_back(static_cast<const char*>(part.data()), part.size());
  } while (part.more());
  received r;
  r.channel = ch;
  if (auto ec = protocol::decode(std::move(frames), signer_, r.message))
    throw bench_error("kernel message rejected: " + ec.message());
  return r;
}

std::optional<received> zmq_connection::receive(std::chrono::milliseconds timeout) {
  zmq::pollitem_t items[] = {{iopub_.handle(), 0, ZMQ_POLLIN, 0},
                             {shell_.handle(), 0, ZMQ_POLLIN, 0},
                             {control_.handle(), 0, ZMQ_POLLIN, 0}};
  if (zmq::poll(items, 3, timeout) == 0) return std::nullopt;
  if (items[0].revents & ZMQ_POLLIN) return read_from(iopub_, channel::iopub);
  if (items[1].revents & ZMQ_POLLIN) return read_from(shell_, channel::shell);
  return read_from(control_, channel::control);
}

}  // namespace sandgate::bench
