#include "egress_server.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "proxy_connection.hpp"

namespace sandgate::egress {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// Checks that `fd` is a TCP socket (a sandbox's 127.0.0.1:3128) and makes it
// listen: a no-op when its supervisor already does. Returns an error text, or "".
std::string listen_on(int fd) {
  int type = 0;
  int domain = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
    return "the listener is not a stream socket";
  len = sizeof domain;
  if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 ||
      (domain != AF_INET && domain != AF_INET6))
    return "the listener is not a TCP socket";
  if (::listen(fd, 128) != 0) return std::string("listen: ") + std::generic_category().message(errno);
  return "";
}

}  // namespace

egress_server::egress_server(asio::io_context& io, name_resolver& resolver, event_sink sink)
    : io_(io), resolver_(resolver), sink_(std::move(sink)), host_own_(host_addresses()) {}

std::string egress_server::set(const std::string& id, const std::string& principal,
                               sandboxing::unique_fd listener, const sandboxing::network_policy& policy) {
  auto& box = boxes_[id];
  if (!box) box = std::make_shared<sandbox_egress>();
  if (listener) {
    std::string error = listen_on(listener.get());
    if (error.empty()) {
      auto acceptor = std::make_unique<tcp::acceptor>(io_);
      boost::system::error_code ec;
      acceptor->assign(tcp::v4(), listener.get(), ec);
      if (ec) error = "the listener: " + ec.message();
      if (error.empty()) {
        (void)listener.release();  // the acceptor owns it now
        if (box->acceptor) box->acceptor->close(ec);
        box->acceptor = std::move(acceptor);
        ++box->acceptor_generation;
        do_accept(box);
      }
    }
    if (!error.empty()) {
      if (!box->acceptor) boxes_.erase(id);
      return error;
    }
  } else if (!box->acceptor) {
    boxes_.erase(id);
    return "a new sandbox needs its listener";
  }
  box->id = id;
  box->principal = principal;
  box->policy = policy;
  box->limiter.set_rate(policy.bytes_per_second);
  // New connections follow the new policy already; open ones it no longer allows end now.
  for (auto& [raw, weak] : std::map(box->connections))
    if (auto c = weak.lock()) c->recheck();
  return "";
}

void egress_server::remove(const std::string& id) {
  auto it = boxes_.find(id);
  if (it == boxes_.end()) return;
  auto box = it->second;
  boxes_.erase(it);
  box->removed = true;
  boost::system::error_code ec;
  if (box->acceptor) box->acceptor->close(ec);
  for (auto& [raw, weak] : std::map(box->connections))
    if (auto c = weak.lock()) c->close("the sandbox ended");
}

void egress_server::remove_all() {
  while (!boxes_.empty())
    remove(boxes_.begin()->first);
}

void egress_server::do_accept(const std::shared_ptr<sandbox_egress>& box) {
  // A later set may replace the acceptor: only the current one's accepts go on.
  box->acceptor->async_accept([this, box, generation = box->acceptor_generation](
                                  const boost::system::error_code& ec, tcp::socket client) {
    if (box->removed) return;
    if (!ec) {  // from this sandbox's socket, whichever acceptor took it
      auto c = std::make_shared<proxy_connection>(std::move(client), box, *this);
      box->connections[c.get()] = c;
      c->start();
    }
    if (ec == asio::error::operation_aborted || generation != box->acceptor_generation) return;
    do_accept(box);
  });
}

}  // namespace sandgate::egress
