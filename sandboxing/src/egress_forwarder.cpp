#include "egress_forwarder.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <system_error>

#include "sandboxing/sys_error.hpp"

namespace sandgate::sandboxing::detail {
namespace {

constexpr std::uint32_t pair_events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;

void write_refusal(int fd, const std::string& why) {
  const std::string body = "sandgate: the egress proxy cannot be reached (" + why + ")\n";
  const std::string reply =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  (void)!::write(fd, reply.data(), reply.size());
}

}  // namespace

unique_fd egress_forwarder::reserve(std::uint16_t port) {
  unique_fd fd(static_cast<int>(check_sys(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0),
                                          "socket(AF_INET, forwarder)")));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  check_sys(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr),
            "bind(127.0.0.1:" + std::to_string(port) + ")");
  return fd;
}

egress_forwarder::egress_forwarder(unique_fd bound, std::string proxy_socket)
    : proxy_socket_(std::move(proxy_socket)), listener_(std::move(bound)) {
  epoll_.reset(static_cast<int>(check_sys(::epoll_create1(EPOLL_CLOEXEC), "epoll_create1(forwarder)")));
  check_sys(::listen(listener_.get(), 128), "listen(forwarder)");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;
  check_sys(::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listener_.get(), &ev), "epoll_ctl(forwarder)");
}

egress_forwarder::~egress_forwarder() = default;

void egress_forwarder::on_ready() {
  epoll_event events[32];
  const int n = ::epoll_wait(epoll_.get(), events, 32, 0);
  std::vector<pair*> finished;
  for (int i = 0; i < n; ++i) {
    auto* p = static_cast<pair*>(events[i].data.ptr);
    if (!p) {
      accept_all();
      continue;
    }
    if (p->closed) continue;
    if (!pump(*p)) {
      p->closed = true;
      finished.push_back(p);
    }
  }
  for (auto* p : finished)
    pairs_.erase(p);  // closes its descriptors, which leaves the epoll set
}

void egress_forwarder::accept_all() {
  for (;;) {
    unique_fd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!client) return;
    if (pairs_.size() >= max_forwarded_connections) {
      write_refusal(client.get(), "too many connections through the forwarder");
      continue;
    }
    unique_fd proxy(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, proxy_socket_.c_str(), sizeof addr.sun_path - 1);
    if (!proxy || ::connect(proxy.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      write_refusal(client.get(),
                    std::string("connect(") + proxy_socket_ + "): " + std::generic_category().message(errno));
      continue;
    }
    const int one = 1;
    ::setsockopt(client.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // Larger batches per splice and fewer wake-ups.
    for (int fd : {client.get(), proxy.get()})
      ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &forwarder_socket_buffer_bytes,
                   sizeof forwarder_socket_buffer_bytes);
    std::unique_ptr<pair> p;
    try {
      p = std::make_unique<pair>();
    } catch (const std::system_error& e) {
      write_refusal(client.get(), std::string("the forwarder cannot relay: ") + e.what());
      continue;
    }
    p->client = std::move(client);
    p->proxy = std::move(proxy);
    p->up.from = p->down.to = p->client.get();
    p->up.to = p->down.from = p->proxy.get();
    epoll_event ev{};
    ev.events = pair_events;
    ev.data.ptr = p.get();
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, p->client.get(), &ev) != 0 ||
        ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, p->proxy.get(), &ev) != 0)
      continue;
    pair* raw = p.get();
    pairs_.emplace(raw, std::move(p));
    if (!pump(*raw)) pairs_.erase(raw);
  }
}

bool egress_forwarder::pump(pair& p) {
  pump(p.up);
  pump(p.down);
  return !(p.up.done && p.down.done);
}

void egress_forwarder::pump(direction& d) {
  if (d.done) return;
  // Edge-triggered: each call goes on until it must wait, which a later edge ends.
  const auto r = d.pump.pump(d.from, d.to, SIZE_MAX);
  if (r.next == egress::splice_pump::wait::ended) {
    ::shutdown(d.to, SHUT_WR);
    d.done = true;
  } else if (r.next == egress::splice_pump::wait::broken) {
    ::shutdown(d.from, SHUT_RD);  // the reader is gone: what is left is dropped
    d.done = true;
  }
}

}  // namespace sandgate::sandboxing::detail
