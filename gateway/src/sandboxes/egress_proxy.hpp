#pragma once
// The gateway's side of sandgate-egress, the proxy through which sandboxes
// with egress reach the outside: started on first use, told each sandbox's
// network policy over a control socket (u32 big-endian length + JSON), with
// the sandbox's listening socket (127.0.0.1:3128 in its network namespace)
// passed along (SCM_RIGHTS), and restarted (with every policy and socket
// sent again) if it dies. Until it is back, a sandbox's connections wait in
// its socket's backlog; they are never served by anything else.

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>
#include <sandboxing/unique_fd.hpp>

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
  // The first set of a sandbox gives its listener; later ones may leave it
  // out (invalid) and keep the one given before.
  void set(const std::string& sandbox_id, const std::string& principal, sandboxing::unique_fd listener,
           const nlohmann::json& policy);
  // Whether the proxy has the sandbox's listener (from an earlier set).
  [[nodiscard]] bool has_listener(const std::string& sandbox_id) const;
  void remove(const std::string& sandbox_id);
  // The proxy's pid, or -1 while it is not running.
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }

 private:
  struct sandbox_set {
    nlohmann::json message;
    sandboxing::unique_fd listener;   // the gateway's copy, for every proxy it starts
    bool proxy_has_listener = false;  // the running proxy got it
  };
  struct frame {
    std::string bytes;
    sandboxing::unique_fd descriptor;  // a copy, closed once sent
  };

  void spawn();
  void on_exit(int status);
  void do_read();
  void send_set(sandbox_set& entry);
  // Queues a frame; `descriptor` (when valid) goes with its first byte.
  void send(const nlohmann::json& message, int descriptor = -1);
  void do_write();
  // Sends the front frame's first bytes and its descriptor; then do_write.
  void write_with_descriptor();

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
  std::map<std::string, sandbox_set> sets_;  // sandbox id -> its last set, sent again after a restart
  connection_listener listener_;
  std::array<char, 64 * 1024> read_buf_{};
  std::unique_ptr<sandboxing::control::frame_decoder> decoder_;
  std::deque<frame> write_queue_;
  bool writing_ = false;
};

}  // namespace sandgate::gateway
