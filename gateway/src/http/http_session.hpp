#pragma once
// One HTTP connection over a plain or TLS stream: completes the TLS
// handshake, reads a request head within explicit size and time limits,
// then its body: into memory for API requests, or straight to a file for
// uploads to a sandbox's workspace. The router answers (possibly
// asynchronously) with any kind of body; WebSocket upgrades go to
// ws_session.

#include "../api/router.hpp"
#include "connection_table.hpp"
#include "port_exchange.hpp"
#include "server.hpp"
#include "streams.hpp"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <memory>
#include <optional>

namespace sandgate::gateway {

template <class Stream>
class http_session final : public std::enable_shared_from_this<http_session<Stream>>,
                           public connection_table::closer {
 public:
  // `place`: the connection's place in the server's connection table, held
  // for the connection's life (a WebSocket's too).
  http_session(Stream&& stream, router& r, http_limits limits, connection_table::slot place);
  void run();
  // A new connection takes this one's place while it waits for a head.
  void close_now() override;

 private:
  void on_handshake(boost::beast::error_code ec);
  // Waits for a request's first bytes, then reads its head. `fresh`: the
  // connection's first request, whose head must be whole within the head's
  // time of now (its accept or TLS handshake); a later request's head has
  // that time from its first byte, and until then the idle timeout applies.
  void wait_for_request(bool fresh);
  void read_header(bool fresh);
  void on_header(boost::beast::error_code ec);
  void on_read(boost::beast::error_code ec);
  // Reads the body of an upload into the job's file; with no job (the
  // upload was refused before its body), reads and drops it, so that the
  // client, still sending, gets to read the answer.
  void read_upload(std::shared_ptr<router::upload_job> job,
                   std::optional<boost::beast::http::message_generator> refusal = std::nullopt);
  void read_upload_some();
  void end_upload(boost::beast::error_code ec);
  // Answers a failed read; false when there is nothing to answer (the peer left).
  bool answer_read_error(boost::beast::error_code ec);
  // A request for a port of a sandbox: admitted, then relayed (port_exchange)
  // on this connection, over the connection to the port kept from the last one.
  void proxy_port(const router::port_target& target);
  void relay_port(router::port_grant grant, std::shared_ptr<port_upstream> upstream);
  void send(boost::beast::http::message_generator&& res);
  void on_write(bool keep_alive, boost::beast::error_code ec);

  Stream stream_;
  boost::beast::flat_buffer buffer_;
  router& router_;
  http_limits limits_;
  connection_table::slot place_;
  // Made when a request's first bytes arrive: a connection that sends
  // nothing holds no parser.
  std::unique_ptr<boost::beast::http::request_parser<boost::beast::http::empty_body>> header_parser_;
  std::unique_ptr<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  // The upload being read.
  struct upload_state {
    boost::beast::http::request_parser<boost::beast::http::buffer_body> parser;
    std::shared_ptr<router::upload_job> job;
    std::optional<boost::beast::http::message_generator> refusal;
    std::uint64_t written = 0;
    std::uint64_t dropped = 0;
    int write_error = 0;  // errno of the first failed write; the rest of the body is dropped
    std::array<char, 64 * 1024> buffer{};
    explicit upload_state(boost::beast::http::request_parser<boost::beast::http::empty_body>&& header)
        : parser(std::move(header)) {}
  };
  std::unique_ptr<upload_state> upload_;
  std::shared_ptr<port_upstream> upstream_;  // to the port the last request went to, kept alive
};

extern template class http_session<plain_stream>;
extern template class http_session<tls_stream>;

}  // namespace sandgate::gateway
