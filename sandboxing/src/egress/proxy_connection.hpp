// One connection from a sandbox: reads the request head (bounded: 16 KiB,
// 100 fields, 10 s), decides with the sandbox's policy, resolves the name
// itself and checks every address, connects to the address it checked, then
// relays bytes both ways (the sandbox's rate limit applies) until either side
// ends. A CONNECT tunnel must begin with one clean TLS ClientHello (client_hello.hpp)
// whose server name is the tunnel's host or allowed by the policy too, or with
// another protocol on a port of the policy's non_tls_ports; otherwise the
// sandbox gets a TLS access_denied alert and nothing reaches the host. Refusals are an HTTP 403 whose
// body names the host and the reason. Each connection is reported once, when it ends, to the server's sink.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "egress_server.hpp"
#include "proxy_request.hpp"
#include "sandboxing/egress_rules.hpp"
#include "splice_pump.hpp"

namespace sandgate::egress {

inline constexpr std::size_t max_header_bytes = 16 * 1024;
inline constexpr std::size_t max_header_fields = 100;
inline constexpr std::chrono::seconds header_timeout{10};
inline constexpr std::chrono::seconds connect_timeout{10};
inline constexpr std::chrono::seconds idle_timeout{300};
inline constexpr std::size_t relay_pipe_bytes = 1024 * 1024;           // per direction, see splice_pump
inline constexpr std::size_t relay_turn_bytes = 4 * relay_pipe_bytes;  // then other connections' turn
inline constexpr std::size_t relay_min_turn_bytes = 16 * 1024;         // when the rate limit leaves less
inline constexpr int relay_socket_buffer_bytes = 1024 * 1024;          // SO_SNDBUF towards the sandbox
inline constexpr std::size_t hello_read_bytes = 16 * 1024;             // per read of a tunnel's first bytes

class proxy_connection : public std::enable_shared_from_this<proxy_connection> {
 public:
  proxy_connection(boost::asio::ip::tcp::socket client, std::shared_ptr<sandbox_egress> box,
                   egress_server& server);
  ~proxy_connection();

  void start();
  // After a policy change: closes the connection if its target is no longer allowed.
  void recheck();
  // Ends the connection now, reported as closed for `reason`; both sockets
  // are reset, so what the proxy still held for the sandbox is dropped.
  void close(const std::string& reason);

 private:
  void on_header(const boost::system::error_code& ec);
  void on_resolved(const std::string& error, const std::vector<sandboxing::ip_address>& addresses);
  void connect_next();
  void on_connected();
  // Pipes and non-blocking sockets for the relay; false (and finished) if it cannot.
  bool start_relay();
  // In a tunnel: holds the sandbox's first bytes until a TLS hello among them
  // is complete, refuses one naming a server the policy does not allow, then
  // starts the relay towards the host with them.
  void inspect_hello();
  [[nodiscard]] sandboxing::egress_decision name_allowed(
      const std::vector<sandboxing::ip_address>& own) const;
  void refuse_tunnel(const std::string& reason);
  void refuse(unsigned status, const std::string& reason);
  void finish(const std::string& verdict, const std::string& reason);
  enum : int { up, down };  // sandbox -> host, host -> sandbox
  // Moves what it can one way, then waits for what that way needs.
  void relay(int way);
  void arm_idle();

  boost::asio::ip::tcp::socket client_;  // in the sandbox's network namespace
  boost::asio::ip::tcp::socket upstream_;
  std::shared_ptr<sandbox_egress> box_;
  egress_server& server_;
  boost::asio::steady_timer timer_;      // header, connect, then idle deadline
  boost::asio::steady_timer up_wait_;    // rate limit, sandbox -> host
  boost::asio::steady_timer down_wait_;  // rate limit, host -> sandbox
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::empty_body>> parser_;
  proxy_target target_;
  std::string method_;
  std::vector<sandboxing::ip_address> candidates_;
  std::size_t next_candidate_ = 0;
  std::optional<sandboxing::ip_address> address_;          // what it connected to
  std::optional<sandboxing::ip_address> refused_address_;  // else the first resolved one it refused
  bool literal_ = false;
  std::string first_refusal_;
  std::string pending_;                 // the response or upstream head being written
  std::string hello_;                   // a tunnel's first bytes, until checked
  std::string server_name_;             // the TLS hello's, normalized
  bool non_tls_ = false;                // a tunnel whose first bytes are another protocol than TLS
  std::optional<splice_pump> up_pump_;  // once relaying
  std::optional<splice_pump> down_pump_;
  std::uint64_t bytes_up_ = 0;
  std::uint64_t bytes_down_ = 0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_activity_ = started_;
  bool relaying_ = false;
  bool done_ = false;
  int halves_open_ = 2;
};

}  // namespace sandgate::egress
