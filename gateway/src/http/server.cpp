#include "server.hpp"

#include "../api/router.hpp"
#include "../util/listen.hpp"
#include "../util/memory_release.hpp"
#include "../util/metrics.hpp"
#include "http_session.hpp"

#include <gateway/log.hpp>

#include <fcntl.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <sstream>
#include <string>
#include <vector>

namespace sandgate::gateway {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// An idle connection leaves a few KiB of heap behind when it closes: after
// this many have closed, the heap's free pages go back to the system once
// the gateway is quiet (memory_release).
constexpr std::size_t release_after_closed = 256;
// Reactor states made at start beyond the connection limit, for the kernels'
// sockets and the gateway's own.
constexpr std::size_t reactor_states_beside_connections = 256;
// How long accepting waits when even the spare descriptor cannot make room.
constexpr std::chrono::milliseconds accept_retry{100};
// Connections accepted and closed at once, each time descriptors run out.
constexpr int most_shed = 64;
// A refusal or a displacement is logged at most this often (a flood would
// fill the log); the metrics count each.
constexpr std::chrono::seconds pressure_log_interval{10};

const char* reason_name(connection_table::refusal why) {
  return why == connection_table::refusal::per_address ? "per_address" : "total";
}

// The whole answer to a connection refused, written once without waiting.
const std::string& refusal_text(connection_table::refusal why) {
  auto make = [](const char* message) {
    auto res = router::error_response_with_reason(http::status::service_unavailable, "too_many_connections",
                                                  message, 11, false);
    res.set(http::field::retry_after, "1");
    std::ostringstream out;
    out << res;
    return out.str();
  };
  static const std::string per_address = make("Too many connections from this address");
  static const std::string total = make("Too many connections");
  return why == connection_table::refusal::per_address ? per_address : total;
}

// Asio's epoll reactor keeps the state of each descriptor it watches (about
// 160 bytes) in a pool that reuses them and never frees them. Made one at a
// time as a flood of connections is accepted, they would sit between the
// connections' buffers, and once the flood is over each would keep a page
// of freed memory resident (malloc_trim gives back whole free pages only):
// tens of MiB after ten thousand idle connections. Made here, together,
// before the first connection, they take a few hundred KiB and the rest
// goes back.
void make_reactor_states(asio::io_context& io, std::size_t n) {
  std::vector<tcp::socket> sockets;
  sockets.reserve(n);
  boost::system::error_code ec;
  for (std::size_t i = 0; i < n && !ec; ++i)
    sockets.emplace_back(io).open(tcp::v4(), ec);
}

sandboxing::unique_fd open_spare() {
  return sandboxing::unique_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
}

}  // namespace

server::server(asio::io_context& io, const tcp::endpoint& ep, router& r, http_limits limits,
               connection_table::limits connections, memory_release& memory, asio::ssl::context* tls)
    : io_(io),
      acceptor_(io),
      router_(r),
      limits_(limits),
      memory_(memory),
      tls_(tls),
      connections_(connections, [this](std::size_t open, bool opened) { on_count(open, opened); }),
      spare_(open_spare()),
      retry_(io) {
  listen_on(acceptor_, ep);
  acceptor_.non_blocking(true);  // shed_backlog accepts until nothing waits
  make_reactor_states(io, connections.total + reactor_states_beside_connections);
  auto& m = gateway_metrics();
  m.connections_limit = connections.total;
  m.connections_per_address_limit = connections.per_address;
}

server::~server() = default;

unsigned short server::port() const {
  return acceptor_.local_endpoint().port();
}

void server::run() {
  do_accept();
}

void server::stop() {
  boost::system::error_code ec;
  acceptor_.close(ec);
  retry_.cancel();
}

void server::do_accept() {
  acceptor_.async_accept(
      [this](boost::system::error_code ec, tcp::socket socket) { on_accept(ec, std::move(socket)); });
}

void server::on_accept(boost::system::error_code ec, tcp::socket socket) {
  if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
  if (ec == asio::error::no_descriptors || ec == boost::system::errc::too_many_files_open_in_system)
    return shed_backlog();
  if (ec == asio::error::no_buffer_space || ec == asio::error::no_memory) {
    log::warn("accept_failed", {{"error", ec.message()}});
    return accept_later();
  }
  if (ec) {
    log::warn("accept_failed", {{"error", ec.message()}});
    return do_accept();
  }
  out_of_descriptors_logged_ = false;
  boost::system::error_code peer_ec;
  const auto peer = socket.remote_endpoint(peer_ec);
  if (!peer_ec) {
    auto admitted = connections_.admit(peer.address());
    auto& m = gateway_metrics();
    if (admitted.displaced_waiting) {
      ++m.connections_displaced;
      note_pressure("connections_displaced", peer.address(), m.connections_displaced);
    }
    if (admitted.refused == connection_table::refusal::none) {
      start_session(std::move(socket), std::move(admitted.place));
    } else {
      const char* reason = reason_name(admitted.refused);
      note_pressure(std::string("connections_refused_") + reason, peer.address(),
                    ++m.connections_refused[reason]);
      refuse(socket, admitted.refused);
    }
  }
  do_accept();
}

void server::note_pressure(const std::string& event, const asio::ip::address& peer, std::uint64_t so_far) {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_pressure_logged_ < pressure_log_interval) return;
  last_pressure_logged_ = now;
  log::warn(event, {{"peer", peer.to_string()},
                    {"open", std::to_string(connections_.open())},
                    {"limit", std::to_string(connections_.limits_in_force().total)},
                    {"so_far", std::to_string(so_far)}});
}

void server::start_session(tcp::socket socket, connection_table::slot place) {
  boost::system::error_code ec;
  socket.set_option(tcp::no_delay(true), ec);
  socket.set_option(asio::socket_base::keep_alive(true), ec);
  if (!tls_)
    std::make_shared<http_session<plain_stream>>(plain_stream(std::move(socket)), router_, limits_,
                                                 std::move(place))
        ->run();
  else
    std::make_shared<http_session<tls_stream>>(tls_stream(std::move(socket), *tls_), router_, limits_,
                                               std::move(place))
        ->run();
}

void server::refuse(tcp::socket& socket, connection_table::refusal why) {
  if (!tls_) {
    // What the client sent already is read first, so that the close sends
    // the answer and a FIN rather than a reset that may discard it.
    const int fd = socket.native_handle();
    std::array<char, 2048> sink{};
    for (int i = 0; i < 4 && ::recv(fd, sink.data(), sink.size(), MSG_DONTWAIT) > 0; ++i) {
    }
    const auto& text = refusal_text(why);
    (void)::send(fd, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  boost::system::error_code ignored;
  socket.close(ignored);
}

void server::shed_backlog() {
  if (!out_of_descriptors_logged_) {
    out_of_descriptors_logged_ = true;
    log::error("out_of_descriptors", {{"open_connections", std::to_string(connections_.open())},
                                      {"what", "connections that wait are accepted and closed"}});
  }
  spare_.reset();
  int shed = 0;
  bool emptied = false;
  for (; shed < most_shed; ++shed) {
    sandboxing::unique_fd fd(::accept4(acceptor_.native_handle(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!fd) {
      emptied = errno == EAGAIN || errno == EWOULDBLOCK;
      break;
    }
    if (!tls_) {
      const auto& text = refusal_text(connection_table::refusal::total);
      (void)::send(fd.get(), text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    ++gateway_metrics().connections_refused["descriptors"];
  }
  spare_ = open_spare();
  if (!spare_ || (!emptied && shed < most_shed)) return accept_later();
  if (shed == most_shed) return do_accept();  // more may wait
  // accept(2) fails with EMFILE even with nothing to accept: the next try
  // waits for a connection, or it would spin until a descriptor is freed.
  acceptor_.async_wait(tcp::acceptor::wait_read, [this](const boost::system::error_code& ec) {
    if (!ec && acceptor_.is_open()) do_accept();
  });
}

void server::accept_later() {
  retry_.expires_after(accept_retry);
  retry_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !acceptor_.is_open()) return;
    if (!spare_) spare_ = open_spare();
    do_accept();
  });
}

void server::on_count(std::size_t open, bool opened) {
  gateway_metrics().connections_open = open;
  if (opened || ++closed_since_release_ < release_after_closed) return;
  closed_since_release_ = 0;
  memory_.soon();  // what closes within its quiet time goes back with it
}

}  // namespace sandgate::gateway
