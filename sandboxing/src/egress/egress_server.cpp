#include "egress_server.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "proxy_connection.hpp"

namespace sandgate::egress {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

egress_server::egress_server(asio::io_context& io, name_resolver& resolver, event_sink sink)
    : io_(io), resolver_(resolver), sink_(std::move(sink)) {}

std::string egress_server::set(const std::string& id, const std::string& principal,
                               sandboxing::unique_fd listener, const sandboxing::network_policy& policy) {
  auto& box = boxes_[id];
  if (!box) box = std::make_shared<sandbox_egress>();
  std::string error = listener        ? accept_on(box, std::move(listener))
                      : box->acceptor ? std::string()
                                      : std::string("a new sandbox needs its listener");
  if (!error.empty()) {
    if (!box->acceptor) boxes_.erase(id);
    return error;
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

std::string egress_server::accept_on(const std::shared_ptr<sandbox_egress>& box,
                                     sandboxing::unique_fd listener) {
  // The gateway checked what it is (check_egress_socket); listening is a
  // no-op when the sandbox's supervisor already does.
  if (::listen(listener.get(), 128) != 0) return "listen: " + std::generic_category().message(errno);
  auto acceptor = std::make_unique<tcp::acceptor>(io_);
  boost::system::error_code ec;
  acceptor->assign(tcp::v4(), listener.get(), ec);
  if (ec) return "the listener: " + ec.message();
  (void)listener.release();  // the acceptor owns it now
  if (box->acceptor) box->acceptor->close(ec);
  box->acceptor = std::move(acceptor);
  ++box->acceptor_generation;
  do_accept(box);
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
