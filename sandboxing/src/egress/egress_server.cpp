#include "egress_server.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "proxy_connection.hpp"

namespace sandgate::egress {
namespace asio = boost::asio;
using stream_protocol = asio::local::stream_protocol;

namespace {

// A listening socket at `path`: whatever the sandbox left there is unlinked
// (unlink and bind never follow a final symlink), then the socket is bound
// with mode 0666; the run dir (0700, the sandbox user's) is what limits who
// reaches it. Returns the descriptor, or -1 with `error` set.
int listen_at(const std::filesystem::path& path, std::string& error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.string().size() >= sizeof addr.sun_path) {
    error = "socket path too long: " + path.string();
    return -1;
  }
  std::strcpy(addr.sun_path, path.c_str());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    error = std::string("socket(AF_UNIX): ") + std::generic_category().message(errno);
    return -1;
  }
  ::unlink(path.c_str());
  const mode_t old = ::umask(0);
  const int rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int bind_errno = errno;
  ::umask(old);
  if (rc != 0 || ::listen(fd, 128) != 0) {
    error = "bind/listen(" + path.string() +
            "): " + std::generic_category().message(rc != 0 ? bind_errno : errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

egress_server::egress_server(asio::io_context& io, name_resolver& resolver, event_sink sink)
    : io_(io), resolver_(resolver), sink_(std::move(sink)), host_own_(host_addresses()) {}

std::string egress_server::set(const std::string& id, const std::string& principal,
                               const std::filesystem::path& socket,
                               const sandboxing::network_policy& policy) {
  auto& box = boxes_[id];
  if (!box) box = std::make_shared<sandbox_egress>();
  box->id = id;
  box->principal = principal;
  box->policy = policy;
  box->limiter.set_rate(policy.bytes_per_second);
  if (!box->acceptor || box->socket_path != socket) {
    std::string error;
    const int fd = listen_at(socket, error);
    if (fd < 0) {
      boxes_.erase(id);
      return error;
    }
    box->acceptor = std::make_unique<stream_protocol::acceptor>(io_);
    box->acceptor->assign(stream_protocol(), fd);
    box->socket_path = socket;
    do_accept(box);
  }
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
  ::unlink(box->socket_path.c_str());
  for (auto& [raw, weak] : std::map(box->connections))
    if (auto c = weak.lock()) c->close("the sandbox ended");
}

void egress_server::remove_all() {
  while (!boxes_.empty())
    remove(boxes_.begin()->first);
}

void egress_server::do_accept(const std::shared_ptr<sandbox_egress>& box) {
  box->acceptor->async_accept(
      [this, box](const boost::system::error_code& ec, stream_protocol::socket client) {
        if (ec == asio::error::operation_aborted || box->removed) return;
        if (!ec) {
          auto c = std::make_shared<proxy_connection>(std::move(client), box, *this);
          box->connections[c.get()] = c;
          c->start();
        }
        do_accept(box);
      });
}

}  // namespace sandgate::egress
