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
#include <cstring>

#include "sandboxing/sys_error.hpp"

namespace sandgate::sandboxing::detail {
namespace {

constexpr std::size_t pipe_bytes = 256 * 1024;  // F_SETPIPE_SZ; 64 KiB if refused
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
      write_refusal(client.get(), std::string("connect(") + proxy_socket_ + "): " + std::strerror(errno));
      continue;
    }
    const int one = 1;
    ::setsockopt(client.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto p = std::make_unique<pair>();
    int up[2], down[2];
    if (::pipe2(up, O_NONBLOCK | O_CLOEXEC) != 0) continue;
    p->up.pipe_read.reset(up[0]);
    p->up.pipe_write.reset(up[1]);
    if (::pipe2(down, O_NONBLOCK | O_CLOEXEC) != 0) continue;
    p->down.pipe_read.reset(down[0]);
    p->down.pipe_write.reset(down[1]);
    for (int fd : {up[1], down[1]})
      ::fcntl(fd, F_SETPIPE_SZ, static_cast<int>(pipe_bytes));
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
  return !(p.up.done() && p.down.done());
}

void egress_forwarder::pump(direction& d) {
  for (;;) {
    if (d.dead) return;
    bool progress = false;
    if (!d.eof && d.in_pipe < pipe_bytes) {
      const ssize_t n = ::splice(d.from, nullptr, d.pipe_write.get(), nullptr, pipe_bytes - d.in_pipe,
                                 SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        d.in_pipe += static_cast<std::size_t>(n);
        progress = true;
      } else if (n == 0) {
        d.eof = true;
        progress = true;
      } else if (errno == EINTR) {
        continue;
      } else if (errno != EAGAIN) {
        d.eof = true;  // a read error ends this way like an end of stream
        progress = true;
      }
    }
    if (d.in_pipe > 0) {
      const ssize_t m =
          ::splice(d.pipe_read.get(), nullptr, d.to, nullptr, d.in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (m > 0) {
        d.in_pipe -= static_cast<std::size_t>(m);
        progress = true;
      } else if (m < 0 && errno != EAGAIN && errno != EINTR) {
        d.dead = true;  // the reader is gone: drop what is left
        ::shutdown(d.from, SHUT_RD);
        return;
      }
    }
    if (d.eof && d.in_pipe == 0 && !d.shut) {
      ::shutdown(d.to, SHUT_WR);
      d.shut = true;
    }
    if (!progress) return;
  }
}

}  // namespace sandgate::sandboxing::detail
