#include "egress_port.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "sandboxing/sys_error.hpp"

namespace sandgate::sandboxing::detail {
namespace {

constexpr int backlog = 128;

constexpr std::string_view refusal_body =
    "sandgate: the egress proxy cannot be reached (no gateway is connected to this sandbox)\n";

}  // namespace

egress_port::egress_port(std::uint16_t port)
    : socket_(static_cast<int>(check_sys(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0),
                                         "socket(AF_INET, egress port)"))) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  check_sys(::bind(socket_.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr),
            "bind(127.0.0.1:" + std::to_string(port) + ")");
}

void egress_port::listen() {
  if (listening_) return;
  check_sys(::listen(socket_.get(), backlog), "listen(egress port)");
  listening_ = true;
}

void egress_port::refuse_waiting() {
  static const std::string reply =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: " +
      std::to_string(refusal_body.size()) + "\r\nConnection: close\r\nX-Sandgate-Egress: refused\r\n\r\n" +
      std::string(refusal_body);
  // Non-blocking again: the proxy shares this open file and could have cleared it.
  ::fcntl(socket_.get(), F_SETFL, ::fcntl(socket_.get(), F_GETFL) | O_NONBLOCK);
  for (;;) {
    const unique_fd client(::accept4(socket_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!client) return;
    // A fresh socket's buffer takes it whole; what it does not take is dropped.
    (void)!::send(client.get(), reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    // What the client sent already is read, so that the close is an end, not a reset that
    // could reach it before the answer does.
    char request[4096];
    for (int i = 0; i < 16 && ::recv(client.get(), request, sizeof request, MSG_DONTWAIT) > 0; ++i) {
    }
  }
}

}  // namespace sandgate::sandboxing::detail
