#include "proxy_connection.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include <sys/socket.h>

#include "client_hello.hpp"
#include "sandboxing/egress_rules.hpp"

namespace sandgate::egress {
namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace sb = sandgate::sandboxing;
using boost::system::error_code;

namespace {

asio::ip::tcp::endpoint endpoint_of(const sb::ip_address& a, std::uint16_t port) {
  if (a.v4) return {asio::ip::address_v4({a.bytes[0], a.bytes[1], a.bytes[2], a.bytes[3]}), port};
  return {asio::ip::address_v6(a.bytes), port};
}

const char* status_text(unsigned status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

constexpr const char* unknown_host_addresses = "the proxy cannot read the host's own addresses now";

}  // namespace

proxy_connection::proxy_connection(asio::ip::tcp::socket client, std::shared_ptr<sandbox_egress> box,
                                   egress_server& server)
    : client_(std::move(client)),
      upstream_(client_.get_executor()),
      box_(std::move(box)),
      server_(server),
      timer_(client_.get_executor()),
      up_wait_(client_.get_executor()),
      down_wait_(client_.get_executor()),
      buffer_(max_header_bytes + 64 * 1024) {}

proxy_connection::~proxy_connection() = default;

void proxy_connection::start() {
  error_code ignored;
  client_.set_option(asio::ip::tcp::no_delay(true), ignored);
  if (box_->connections.size() > box_->policy.max_connections)
    return refuse(429, "the sandbox already has " + std::to_string(box_->policy.max_connections) +
                           " connections open, its most");
  parser_.emplace();
  parser_->header_limit(max_header_bytes);
  parser_->body_limit(boost::none);  // the body is relayed, never parsed: no limit on an upload's size
  timer_.expires_after(header_timeout);
  timer_.async_wait([self = shared_from_this()](const error_code& ec) {
    if (!ec && !self->relaying_ && !self->done_) self->finish("refused", "no request head within 10 s");
  });
  http::async_read_header(
      client_, buffer_, *parser_,
      [self = shared_from_this()](const error_code& ec, std::size_t) { self->on_header(ec); });
}

void proxy_connection::on_header(const error_code& ec) {
  if (done_) return;
  if (ec == http::error::header_limit) return refuse(431, "the request head is larger than 16 KiB");
  if (ec == http::error::end_of_stream || ec == asio::error::eof) {
    done_ = true;  // closed without asking for anything: nothing to report
    box_->connections.erase(this);
    return;
  }
  if (ec) return refuse(400, "malformed request: " + ec.message());
  const auto& req = parser_->get();
  if (std::distance(req.begin(), req.end()) > static_cast<std::ptrdiff_t>(max_header_fields))
    return refuse(431, "the request has more than 100 header fields");
  std::string error;
  auto target = target_of(req, error);
  if (!target) return refuse(400, error);
  target_ = *target;
  method_ = std::string(req.method_string());
  const auto* own = server_.host_own();
  if (!own) return refuse(503, unknown_host_addresses);
  const auto decision = sb::check_target(box_->policy, target_.host, target_.port, *own);
  if (!decision.allowed) return refuse(403, decision.reason);
  if (const auto literal = sb::parse_ip(target_.host)) {
    literal_ = true;
    candidates_ = {*literal};
    return connect_next();
  }
  server_.resolver().resolve(
      target_.host,
      [self = shared_from_this()](const std::string& why, const std::vector<sb::ip_address>& found) {
        self->on_resolved(why, found);
      });
}

void proxy_connection::on_resolved(const std::string& error, const std::vector<sb::ip_address>& addresses) {
  if (done_) return;
  if (!error.empty()) return refuse(502, error);
  // The policy (or the host's addresses) may have changed while the name was being resolved.
  const auto* own = server_.host_own();
  if (!own) return refuse(503, unknown_host_addresses);
  const auto decision = sb::check_target(box_->policy, target_.host, target_.port, *own);
  if (!decision.allowed) return refuse(403, decision.reason);
  for (const auto& a : addresses) {
    const auto d = sb::check_address(box_->policy, a, false, *own);
    if (d.allowed) {
      candidates_.push_back(a);
    } else if (first_refusal_.empty()) {
      first_refusal_ = d.reason;
      refused_address_ = a;
    }
  }
  if (candidates_.empty())
    return refuse(403, target_.host + " resolves only to refused addresses: " + first_refusal_);
  connect_next();
}

void proxy_connection::connect_next() {
  if (done_) return;
  if (next_candidate_ >= candidates_.size())
    return refuse(502, "cannot connect to " + target_.host + ":" + std::to_string(target_.port) +
                           (first_refusal_.empty() ? "" : " (" + first_refusal_ + ")"));
  const auto a = candidates_[next_candidate_];
  timer_.expires_after(connect_timeout);
  timer_.async_wait([self = shared_from_this()](const error_code& ec) {
    if (!ec && !self->relaying_) self->upstream_.close();
  });
  // The address connected to is the one just checked: no second lookup.
  upstream_.async_connect(endpoint_of(a, target_.port), [self = shared_from_this(), a](const error_code& ec) {
    if (self->done_) return;
    if (ec) {
      if (self->first_refusal_.empty()) self->first_refusal_ = sb::to_string(a) + ": " + ec.message();
      error_code ignored;
      self->upstream_.close(ignored);
      ++self->next_candidate_;
      return self->connect_next();
    }
    self->address_ = a;
    self->on_connected();
  });
}

void proxy_connection::on_connected() {
  timer_.cancel();
  error_code ignored;
  upstream_.set_option(asio::ip::tcp::no_delay(true), ignored);
  relaying_ = true;
  recheck();  // a policy change during the connect
  if (done_) return;
  const auto data = buffer_.data();
  const std::string early(static_cast<const char*>(data.data()), data.size());  // sent after the head
  buffer_.consume(buffer_.size());
  auto self = shared_from_this();
  if (target_.tunnel) {
    // The sandbox's first bytes wait until its TLS hello (if it sends one) is
    // checked; the host's side flows at once, for protocols where it speaks first.
    hello_ = early;
    pending_ = "HTTP/1.1 200 Connection established\r\n\r\n";
    asio::async_write(client_, asio::buffer(pending_), [self](const error_code& ec, std::size_t) {
      if (ec) return self->finish("allowed", "");
      if (!self->start_relay()) return;
      self->relay(down);
      self->inspect_hello();
    });
    return;
  }
  pending_ = upstream_head(parser_->get(), target_) + early;
  bytes_up_ += pending_.size();
  asio::async_write(upstream_, asio::buffer(pending_), [self](const error_code& ec, std::size_t) {
    if (ec) return self->finish("allowed", "");
    if (!self->start_relay()) return;
    self->relay(up);
    self->relay(down);
  });
}

bool proxy_connection::start_relay() {
  try {
    up_pump_.emplace(relay_pipe_bytes);
    down_pump_.emplace(relay_pipe_bytes);
  } catch (const std::system_error& e) {
    finish("closed", std::string("the proxy cannot relay: ") + e.what());
    return false;
  }
  error_code nb;
  // Larger batches per splice and per wake-up of the client (capped by net.core.wmem_max).
  client_.set_option(asio::socket_base::send_buffer_size(relay_socket_buffer_bytes), nb);
  client_.native_non_blocking(true, nb);
  if (!nb) upstream_.native_non_blocking(true, nb);
  if (nb) {
    finish("closed", "the proxy cannot relay: " + nb.message());
    return false;
  }
  arm_idle();
  return true;
}

void proxy_connection::inspect_hello() {
  if (done_) return;
  const auto scan = scan_client_hello(hello_);
  using kind = client_hello_scan::kind;
  switch (scan.what) {
    case kind::refused:
      return refuse_tunnel("not a clean TLS ClientHello: " + scan.error);
    case kind::not_tls:
      non_tls_ = true;
      if (!sb::non_tls_allowed(box_->policy, target_.port))
        return refuse_tunnel("the tunnel's first bytes are not a TLS ClientHello, and port " +
                             std::to_string(target_.port) + " is not in the sandbox's non_tls_ports");
      break;
    case kind::named: {
      server_name_ = sb::normalize_host(scan.server_name);
      const auto* own = server_.host_own();
      if (!own) return refuse_tunnel(unknown_host_addresses);
      if (const auto d = name_allowed(*own); !d.allowed) return refuse_tunnel(d.reason);
      break;
    }
    case kind::no_name:
    case kind::need_more:
      break;
  }
  if (scan.what != kind::need_more) {
    // Checked: what was held goes first, then the relay takes over.
    pending_ = std::move(hello_);
    hello_.clear();
    bytes_up_ += pending_.size();
    return asio::async_write(upstream_, asio::buffer(pending_),
                             [self = shared_from_this()](const error_code& ec, std::size_t) {
                               if (ec) return self->finish("allowed", "");
                               self->relay(up);
                             });
  }
  const auto held = hello_.size();  // read straight into the held bytes (scan bounds them at 64 KiB)
  hello_.resize(held + hello_read_bytes);
  client_.async_read_some(asio::buffer(hello_.data() + held, hello_read_bytes),
                          [self = shared_from_this(), held](const error_code& ec, std::size_t n) {
                            self->hello_.resize(held + (ec ? 0 : n));
                            if (self->done_) return;
                            if (ec == asio::error::eof && held == 0) {  // ended without sending: half-close
                              ::shutdown(self->upstream_.native_handle(), SHUT_WR);
                              if (--self->halves_open_ == 0) self->finish("allowed", "");
                              return;
                            }
                            if (ec == asio::error::eof)
                              return self->finish("closed", "the sandbox ended inside its TLS ClientHello");
                            if (ec) return self->finish("allowed", "");
                            self->last_activity_ = std::chrono::steady_clock::now();
                            self->inspect_hello();
                          });
}

sb::egress_decision proxy_connection::name_allowed(const std::vector<sb::ip_address>& own) const {
  if (server_name_.empty() || server_name_ == target_.host) return {true, ""};
  auto d = sb::check_target(box_->policy, server_name_, target_.port, own);
  if (!d.allowed)
    d.reason =
        "the TLS server name " + server_name_ + " is not the tunnel's host " + target_.host + ": " + d.reason;
  return d;
}

void proxy_connection::refuse_tunnel(const std::string& reason) {
  if (done_) return;
  // The 200 is sent, so the answer is TLS's own: a fatal access_denied alert.
  error_code ignored;
  upstream_.close(ignored);  // nothing more from the host; the relay towards the sandbox stops
  pending_ = std::string("\x15\x03\x03\x00\x02\x02\x31", 7);
  asio::async_write(client_, asio::buffer(pending_),
                    [self = shared_from_this(), reason](const error_code&, std::size_t) {
                      error_code unused;
                      self->client_.shutdown(asio::ip::tcp::socket::shutdown_send, unused);
                      self->finish("refused", reason);
                    });
}

void proxy_connection::relay(int way) {
  if (done_ || !upstream_.is_open()) return;
  auto& pump = way == up ? *up_pump_ : *down_pump_;
  const int from = way == up ? client_.native_handle() : upstream_.native_handle();
  const int to = way == up ? upstream_.native_handle() : client_.native_handle();
  // At most what the sandbox's rate allows now (a little at least, then it waits).
  const auto budget =
      std::clamp<std::uint64_t>(box_->limiter.available(), relay_min_turn_bytes, relay_turn_bytes);
  const auto r = pump.pump(from, to, budget);
  if (r.moved > 0) {
    (way == up ? bytes_up_ : bytes_down_) += r.moved;
    last_activity_ = std::chrono::steady_clock::now();
  }
  auto again = [self = shared_from_this(), way](const error_code& ec) {
    if (!ec) self->relay(way);
  };
  switch (r.next) {
    case splice_pump::wait::broken:
      return finish("allowed", "");
    case splice_pump::wait::ended:
      ::shutdown(to, SHUT_WR);
      if (--halves_open_ == 0) finish("allowed", "");
      return;
    default:
      break;
  }
  if (const auto pause = box_->limiter.take(r.moved); pause != pause.zero()) {
    auto& timer = way == up ? up_wait_ : down_wait_;
    timer.expires_after(pause);
    return timer.async_wait(again);
  }
  if (r.next == splice_pump::wait::none) return asio::post(client_.get_executor(), [again] { again({}); });
  const bool on_client = (way == up) == (r.next == splice_pump::wait::readable);
  const auto what =
      r.next == splice_pump::wait::readable ? asio::socket_base::wait_read : asio::socket_base::wait_write;
  if (on_client) return client_.async_wait(what, again);
  upstream_.async_wait(what, again);
}

void proxy_connection::arm_idle() {
  timer_.expires_after(std::chrono::seconds(30));
  timer_.async_wait([self = shared_from_this()](const error_code& ec) {
    if (ec || self->done_) return;
    if (std::chrono::steady_clock::now() - self->last_activity_ > idle_timeout)
      return self->close("idle for 300 s");
    self->arm_idle();
  });
}

void proxy_connection::recheck() {
  if (done_ || !address_) return;
  const auto* own = server_.host_own();
  if (!own) return close(unknown_host_addresses);
  auto d = sb::check_target(box_->policy, target_.host, target_.port, *own);
  if (d.allowed) d = sb::check_address(box_->policy, *address_, literal_, *own);
  if (d.allowed) d = name_allowed(*own);
  if (d.allowed && non_tls_ && !sb::non_tls_allowed(box_->policy, target_.port))
    d = {false, "port " + std::to_string(target_.port) + " is no longer in the sandbox's non_tls_ports"};
  if (!d.allowed) close("the sandbox's network policy changed: " + d.reason);
}

void proxy_connection::close(const std::string& reason) {
  if (done_) return;
  error_code ignored;
  // A reset, not an orderly end: bytes still queued towards the sandbox go nowhere.
  client_.set_option(asio::socket_base::linger(true, 0), ignored);
  upstream_.set_option(asio::socket_base::linger(true, 0), ignored);
  finish("closed", reason);
}

void proxy_connection::refuse(unsigned status, const std::string& reason) {
  if (done_) return;
  const std::string where =
      target_.host.empty() ? std::string("request") : target_.host + ":" + std::to_string(target_.port);
  const std::string body = "sandgate-egress: refused " + where + ": " + reason + "\n";
  pending_ = "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) +
             "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\nConnection: close\r\nX-Sandgate-Egress: refused\r\n\r\n" + body;
  relaying_ = true;  // the header deadline no longer applies
  asio::async_write(client_, asio::buffer(pending_),
                    [self = shared_from_this(), status, reason](const error_code&, std::size_t) {
                      error_code ignored;
                      self->client_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
                      self->finish("refused", reason);
                      (void)status;
                    });
}

void proxy_connection::finish(const std::string& verdict, const std::string& reason) {
  if (done_) return;
  done_ = true;
  error_code ignored;
  timer_.cancel();
  up_wait_.cancel();
  down_wait_.cancel();
  upstream_.close(ignored);
  client_.close(ignored);
  box_->connections.erase(this);
  server_.report({{"event", "connection"},
                  {"sandbox_id", box_->id},
                  {"principal", box_->principal},
                  {"method", method_},
                  {"host", target_.host},
                  {"port", target_.port},
                  {"server_name", server_name_},
                  {"address", address_           ? sb::to_string(*address_)
                              : refused_address_ ? sb::to_string(*refused_address_)
                                                 : std::string()},
                  {"bytes_up", bytes_up_},
                  {"bytes_down", bytes_down_},
                  {"verdict", verdict},
                  {"reason", reason},
                  {"duration_ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::steady_clock::now() - started_)
                                      .count()}});
}

}  // namespace sandgate::egress
