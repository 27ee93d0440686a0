#pragma once
// One running kernel: a coordinator of the parts that do its jobs. Its
// phase (created, starting, running, restarting, stopping, ended) decides
// what each event does; the parts are the process in its sandbox
// (kernel_process), the ZeroMQ channels and their probe (kernel_channels),
// the WebSocket clients (client_hub), the record of every execute
// (execution_log) and its time limit (execution_watchdog), the gateway's
// own requests (own_requests), and, after a gateway restart, the executions
// taken up from the kernel's journal (journal_takeover).

#include "../bridge/client_hub.hpp"
#include "../bridge/input_flow.hpp"
#include "../bridge/output_budget.hpp"
#include "../sandboxes/sandbox.hpp"
#include "executions.hpp"
#include "kernel_options.hpp"
#include "own_requests.hpp"
#include "zmq_channel.hpp"

#include <jupyter_protocol/connection_file.hpp>

#include <nlohmann/json.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sandgate::gateway {

class kernel_channels;
class kernel_process;
class execution_watchdog;
class journal_takeover;

class kernel : public std::enable_shared_from_this<kernel> {
 public:
  using done_handler = std::function<void(std::string error)>;  // empty: success

 private:
  struct passkey {
    explicit passkey() = default;
  };

 public:
  // A kernel of `opts` in `box`, wired to its parts; nothing runs until
  // start() or reattach().
  // `budget`: the gateway's budget for output held in memory (null: none).
  static std::shared_ptr<kernel> create(boost::asio::io_context& io, zmq::context_t& zmq, kernel_options opts,
                                        std::shared_ptr<sandbox> box,
                                        std::shared_ptr<output_budget> budget = {});
  kernel(passkey, boost::asio::io_context& io, kernel_options opts, std::shared_ptr<sandbox> box);
  ~kernel();
  kernel(const kernel&) = delete;
  kernel& operator=(const kernel&) = delete;

  void start(done_handler done);
  // Takes back a kernel an earlier gateway started (same id, same key):
  // its process in the sandbox, its channels, then a kernel_info_reply,
  // like a start without the launch.
  void reattach(done_handler done);
  // Lets go of the kernel and leaves it running for the next gateway:
  // clients are closed (1001, going away: 1012 is refused by some client
  // libraries), channels closed, nothing is signalled.
  void leave_running();
  void restart(done_handler done);
  void interrupt();
  // Ends the kernel: shutdown_request, SIGTERM, SIGKILL; closes clients.
  void shutdown(done_handler done);
  // Ends the kernel at once because its sandbox is going away (its processes
  // die with it); clients are closed with `why`. `sandbox_ended`: why the
  // sandbox ended ("deleted", "expired", ...), which running executions end
  // with; empty when the kernel ends for another reason.
  void terminate(const std::string& why, const std::string& sandbox_ended = {});

  // Runs code as the gateway's own request (the REST execute); `done` gets
  // the record when it ends. While the kernel (re)starts the request waits.
  void execute(const std::string& code, std::optional<std::chrono::milliseconds> timeout,
               execution_log::waiter done);
  [[nodiscard]] std::shared_ptr<execution_record> execution(const std::string& msg_id) const {
    return executions_.find(msg_id);
  }
  // Told of every execution record as it ends.
  void on_execution_finished(execution_log::waiter listener) { executions_.on_finish(std::move(listener)); }
  // Told of every execution record as it begins.
  void on_execution_started(execution_log::waiter listener) { executions_.on_start(std::move(listener)); }
  // Before reattach(): the executions an earlier gateway left running, to
  // be taken up from the kernel's journal (see journal_takeover::expect).
  void take_up_executions(const std::vector<std::string>& stored,
                          std::function<bool(const std::string& msg_id)> recorded);

  // A warm pool's kernel becomes `owner`'s: restarts launch it with `env`
  // merged in, and `owns_sandbox` says whether its sandbox ends with it. The
  // running process gets `env` from apply_env().
  void assign(const std::string& owner, bool owns_sandbox, const std::map<std::string, std::string>& env);
  // Sets variables in the running kernel's process environment, with a
  // silent execute of the kernelspec's language (python or bash); `done`
  // gets an error for any other language, or when the execute fails. A
  // kernel still starting gets them once it runs, before anything a client
  // sent meanwhile.
  void apply_env(const std::map<std::string, std::string>& env, done_handler done);
  // Whether apply_env() can reach this kernel's language.
  [[nodiscard]] bool can_apply_env() const;
  // Runs `code` as a silent execute of the gateway's own: no client sees it,
  // no execution is recorded, the execution count stays.
  void execute_silently(const std::string& code, done_handler done);

  void join(const std::shared_ptr<kernel_client>& client);
  // `unsent`: messages the client had not received; they go first into the
  // session's replay buffer.
  void leave(const std::shared_ptr<kernel_client>& client,
             const std::vector<std::shared_ptr<outgoing>>& unsent = {});
  // A client's message for the kernel. False: the kernel's input is behind,
  // and the client reads no more until its resume_input() is called.
  [[nodiscard]] bool from_client(const std::shared_ptr<kernel_client>& client, protocol::channel ch,
                                 protocol::message msg);
  // A client that has fallen behind holds the kernel's output back until it
  // catches up (see kernel_channels::hold_output).
  void hold_output();
  void release_output();

  [[nodiscard]] const std::string& id() const noexcept { return opts_.id; }
  [[nodiscard]] const std::string& owner() const noexcept { return opts_.owner; }
  [[nodiscard]] const std::string& sandbox_id() const noexcept { return opts_.sandbox_id; }
  [[nodiscard]] const std::string& name() const noexcept { return opts_.spec.name; }
  [[nodiscard]] const std::string& language() const noexcept { return opts_.spec.language; }
  [[nodiscard]] const std::string& execution_state() const noexcept { return state_; }
  // When the kernel last sent or was sent a message, as ISO 8601 UTC.
  [[nodiscard]] std::string last_activity() const { return protocol::iso8601(last_activity_); }
  // When the kernel last sent or was sent a message.
  [[nodiscard]] std::chrono::steady_clock::time_point active_at() const noexcept { return active_at_; }
  [[nodiscard]] std::size_t connections() const noexcept { return clients_.size(); }
  [[nodiscard]] bool ended() const noexcept { return phase_ == phase::ended; }
  [[nodiscard]] const std::string& connection_key() const noexcept { return conn_.key; }
  // What a later gateway needs to take the kernel back (its key among them:
  // the registry file is the gateway's alone, mode 0600).
  [[nodiscard]] nlohmann::json reattach_record() const;

 private:
  enum class phase { created, starting, running, restarting, stopping, ended };

  struct held_message {
    std::weak_ptr<kernel_client> client;
    protocol::channel ch;
    protocol::message msg;
  };
  static constexpr std::size_t max_held_messages = 1000;

  // kernel.cpp: the phases.
  void launch(done_handler done);
  void expect_ready();
  void open_channels();
  void on_started(const std::string& error);
  void on_process_exit(const exit_status& st);
  void stop_process(std::function<void()> after_exit);
  void finish_stop(const std::string& why = "kernel shut down", const std::string& sandbox_ended = {});
  // kernel_messages.cpp: what comes from the kernel and from clients.
  void on_kernel_message(protocol::channel ch, protocol::message&& msg);
  void on_oversized(protocol::channel ch, protocol::message&& head, std::size_t bytes);
  void on_status(const protocol::message& msg, const std::string& state);
  void record(protocol::channel ch, const protocol::message& msg, std::string_view status);
  void send_held();
  void apply_pending_env();
  void refuse(const std::shared_ptr<kernel_client>& client, protocol::channel ch,
              const protocol::message& msg, const std::string& why);
  void send_status(std::string_view state);
  void touch();
  // kernel_requests.cpp: the gateway's own requests.
  [[nodiscard]] protocol::message execute_request(const std::string& code, bool silent) const;
  void nudge();
  void on_execution_limit(const std::string& msg_id);

  boost::asio::io_context& io_;
  kernel_options opts_;
  std::string session_;  // the gateway's own session id for its messages
  protocol::connection_info conn_;
  std::shared_ptr<kernel_process> process_;
  std::shared_ptr<kernel_channels> channels_;
  client_hub clients_;
  execution_log executions_;
  std::shared_ptr<execution_watchdog> watchdog_;
  std::shared_ptr<journal_takeover> takeover_;
  own_requests own_;
  std::shared_ptr<output_account> output_;         // this kernel's part of the output budget, if there is one
  std::vector<held_message> held_;                 // from clients while the kernel (re)starts
  input_waiters input_waiters_;                    // clients that stopped reading until input can go on
  std::vector<std::function<void()>> when_ready_;  // REST executes waiting for a (re)start
  // apply_env() while the kernel starts: applied first thing once it runs.
  std::map<std::string, std::string> pending_env_;
  std::vector<done_handler> pending_env_done_;

  phase phase_ = phase::created;
  std::string state_ = "starting";
  // busy from the stored running rows of a taken-over kernel, until a live
  // status or its journal says otherwise
  bool state_presumed_ = false;
  bool left_running_ = false;  // for the next gateway
  unsigned auto_restarts_ = 0;
  done_handler start_done_;
  std::chrono::system_clock::time_point last_activity_ = std::chrono::system_clock::now();
  std::chrono::steady_clock::time_point active_at_ = std::chrono::steady_clock::now();
};

}  // namespace sandgate::gateway
