#include "dns_lookup.hpp"

#include <sys/random.h>

#include <algorithm>

#include "name_resolver.hpp"
#include "sandboxing/network_policy.hpp"

namespace sandgate::egress {
namespace asio = boost::asio;
using boost::system::error_code;

namespace {

std::string describe(const asio::ip::udp::endpoint& e) {
  return (e.address().is_v6() ? "[" + e.address().to_string() + "]" : e.address().to_string()) + ":" +
         std::to_string(e.port());
}

}  // namespace

void dns_lookup::start(asio::io_context& io, const asio::ip::udp::endpoint& server, std::string host,
                       handler done) {
  std::make_shared<dns_lookup>(io, server, std::move(host), std::move(done))->begin();
}

dns_lookup::dns_lookup(asio::io_context& io, const asio::ip::udp::endpoint& server, std::string host,
                       handler done)
    : socket_(io), server_(server), timer_(io), host_(std::move(host)), done_(std::move(done)) {
  queries_[1].type = dns::record_type::aaaa;
}

void dns_lookup::begin() {
  std::uint16_t ids[2] = {};
  if (::getrandom(ids, sizeof ids, 0) != static_cast<ssize_t>(sizeof ids))
    return finish("getrandom failed for the DNS query ids");
  if (ids[0] == ids[1]) ++ids[1];
  for (std::size_t i = 0; i < queries_.size(); ++i) {
    queries_[i].id = ids[i];
    auto wire = dns::encode_query(ids[i], host_, queries_[i].type);
    if (!wire) return finish(host_ + " is not a name DNS can ask for");
    queries_[i].wire = std::move(*wire);
  }
  error_code ec;
  socket_.open(server_.protocol(), ec);
  if (!ec) socket_.connect(server_, ec);  // only the server's datagrams reach this socket
  if (ec) return finish("cannot reach the DNS server " + describe(server_) + ": " + ec.message());
  send_unanswered();
  do_receive();
}

void dns_lookup::send_unanswered() {
  ++attempts_;
  for (const auto& q : queries_) {
    if (q.answered) continue;
    error_code ec;
    socket_.send(asio::buffer(q.wire), 0, ec);  // a refusal shows as no answer
  }
  arm_timer();
}

void dns_lookup::arm_timer() {
  timer_.expires_after(dns_attempt_timeout);
  timer_.async_wait([self = shared_from_this()](const error_code& ec) {
    if (ec || self->finished_) return;
    const bool any = std::any_of(self->queries_.begin(), self->queries_.end(),
                                 [](const query& q) { return q.answered && !q.result.addresses.empty(); });
    if (self->attempts_ < dns_attempts && !any) return self->send_unanswered();
    self->finish("no answer from the DNS server " + describe(self->server_) + " within " +
                 std::to_string(self->attempts_ * dns_attempt_timeout.count()) + " s");
  });
}

void dns_lookup::do_receive() {
  socket_.async_receive(asio::buffer(buf_), [self = shared_from_this()](const error_code& ec, std::size_t n) {
    if (self->finished_) return;
    // An ICMP refusal ends nothing (the timer decides); any other error ends the reading.
    if (ec && ec != asio::error::connection_refused) return;
    if (!ec) {
      const std::string_view message(self->buf_.data(), n);
      const auto id = dns::message_id(message);
      for (auto& q : self->queries_) {
        if (q.answered || !id || *id != q.id) continue;
        auto result = dns::parse_answer(message, q.id, self->host_, q.type);
        if (result.error == "not the response to the query") break;  // a stray datagram
        q.result = std::move(result);
        q.answered = true;
      }
      if (std::all_of(self->queries_.begin(), self->queries_.end(),
                      [](const query& q) { return q.answered; }))
        return self->finish("");
    }
    self->do_receive();
  });
}

void dns_lookup::finish(const std::string& error) {
  if (finished_) return;
  finished_ = true;
  error_code ignored;
  timer_.cancel();
  socket_.close(ignored);
  std::vector<sandboxing::ip_address> out;
  std::string why;
  for (const auto& q : queries_) {
    for (const auto& a : q.result.addresses)
      out.push_back(a);
    if (why.empty() && q.answered) why = q.result.error;
  }
  if (!out.empty()) return done_("", std::move(out));
  if (!error.empty()) why = error;
  done_("cannot resolve " + host_ + ": " + (why.empty() ? "no addresses" : why), {});
}

}  // namespace sandgate::egress
