#pragma once
// The floor: a client on the kernel's own ZeroMQ sockets (shell and
// control DEALERs, iopub SUB), signing and verifying as jupyter_client does.

#include "kernel_connection.hpp"

#include <jupyter_protocol/connection_file.hpp>
#include <jupyter_protocol/signer.hpp>

#include <zmq.hpp>

namespace sandgate::bench {

class zmq_connection final : public kernel_connection {
 public:
  zmq_connection(zmq::context_t& ctx, const protocol::connection_info& info, std::string session);

  void send(protocol::channel ch, const protocol::message& msg) override;
  std::optional<received> receive(std::chrono::milliseconds timeout) override;

 private:
  [[nodiscard]] received read_from(zmq::socket_t& socket, protocol::channel ch);

  protocol::signer signer_;
  zmq::socket_t shell_;
  zmq::socket_t control_;
  zmq::socket_t iopub_;
};

}  // namespace sandgate::bench
