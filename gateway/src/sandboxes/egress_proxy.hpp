#pragma once
// The gateway's side of sandgate-egress, the proxy through which sandboxes
// with egress reach the outside: started on first use, told each sandbox's
// network policy over a control socket (u32 big-endian length + JSON), and
// restarted (with every policy sent again) if it dies. Until it is back,
// sandboxes' connections are refused by their forwarders: egress fails closed.

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include <sys/types.h>
#include <array>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace sandgate::sandboxing::control {
class frame_decoder;
}

namespace sandgate::gateway {

class egress_proxy {
 public:
  // Called for each connection the proxy reports (allowed, refused, closed).
  using connection_listener = std::function<void(const nlohmann::json& event)>;

  // `hosts_file` and `resolver` ("ADDR:PORT") are how the proxy resolves
  // names (sandgate-egress --hosts-file, --resolver); empty: not given.
  egress_proxy(boost::asio::io_context& io, std::filesystem::path program, std::filesystem::path hosts_file,
               std::string resolver, std::filesystem::path log_path);
  ~egress_proxy();
  egress_proxy(const egress_proxy&) = delete;
  egress_proxy& operator=(const egress_proxy&) = delete;

  void on_connection(connection_listener listener) { listener_ = std::move(listener); }
  // Starts the proxy now if it is not running (nor waiting to be restarted).
  void start();
  // The sandbox's policy from now on (new connections at once; open ones it
  // no longer allows are closed); starts the proxy if it is not running.
  void set(const std::string& sandbox_id, const std::string& principal, const std::filesystem::path& socket,
           const nlohmann::json& policy);
  void remove(const std::string& sandbox_id);
  // The proxy's pid, or -1 while it is not running.
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }

 private:
  void spawn();
  void on_exit(int status);
  void do_read();
  void send(const nlohmann::json& message);
  void do_write();

  boost::asio::io_context& io_;
  std::filesystem::path program_;
  std::filesystem::path hosts_file_;
  std::string resolver_;
  std::filesystem::path log_path_;
  boost::asio::local::stream_protocol::socket socket_;
  boost::asio::steady_timer restart_timer_;
  pid_t pid_ = -1;
  bool stopping_ = false;
  unsigned quick_restarts_ = 0;
  std::map<std::string, nlohmann::json> sets_;  // sandbox id -> its set message, sent again after a restart
  connection_listener listener_;
  std::array<char, 64 * 1024> read_buf_{};
  std::unique_ptr<sandboxing::control::frame_decoder> decoder_;
  std::deque<std::string> write_queue_;
  bool writing_ = false;
};

}  // namespace sandgate::gateway
