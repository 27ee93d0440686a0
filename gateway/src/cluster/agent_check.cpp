#include "agent_check.hpp"

#include "../util/listen.hpp"

#include <gateway/log.hpp>

#include <boost/asio/write.hpp>

#include <algorithm>
#include <chrono>
#include <memory>

namespace sandgate::gateway {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

std::string capacity_report(std::size_t free, std::size_t max, bool draining) {
  if (draining || free == 0 || max == 0) return "drain\n";
  // At least 1%: 0% would mean no weight, which is what drain says.
  const std::size_t percent = std::max<std::size_t>(1, free * 100 / max);
  return "ready " + std::to_string(percent) + "%\n";
}

agent_check::agent_check(asio::io_context& io, const tcp::endpoint& endpoint,
                         std::function<std::string()> report)
    : acceptor_(io), report_(std::move(report)), retry_(io) {
  listen_on(acceptor_, endpoint);
  accept();
}

void agent_check::stop() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  retry_.cancel();
}

void agent_check::accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) return accept_later(ec);
    failing_ = false;
    auto s = std::make_shared<tcp::socket>(std::move(socket));
    auto line = std::make_shared<std::string>(report_());
    asio::async_write(*s, asio::buffer(*line), [s, line](boost::system::error_code, std::size_t) {
      boost::system::error_code ignored;
      s->shutdown(tcp::socket::shutdown_both, ignored);
      s->close(ignored);
    });
    accept();
  });
}

void agent_check::accept_later(const boost::system::error_code& ec) {
  if (!failing_) log::warn("agent_check_accept_failed", {{"error", ec.message()}});
  failing_ = true;
  retry_.expires_after(std::chrono::milliseconds(100));
  retry_.async_wait([this](boost::system::error_code wait_ec) {
    if (!wait_ec && acceptor_.is_open()) accept();
  });
}

}  // namespace sandgate::gateway
