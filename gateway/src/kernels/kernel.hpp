#pragma once
// One running kernel: its process (inside a sandbox), its ZeroMQ channels,
// its WebSocket clients, the routing of replies to the client that asked,
// and the output kept for session_ids that are disconnected.

#include "../bridge/input_flow.hpp"
#include "../bridge/outgoing.hpp"
#include "executions.hpp"
#include "sandbox.hpp"
#include "socket_pins.hpp"
#include "zmq_channel.hpp"

#include <gateway/kernelspec.hpp>
#include <jupyter_protocol/connection_file.hpp>
#include <jupyter_protocol/signer.hpp>

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace sandgate::gateway {

struct kernel_limits {
  std::chrono::seconds start_timeout{60};
  std::chrono::seconds shutdown_grace{3};
  std::chrono::seconds replay_retention{600};
  std::size_t replay_buffer_bytes = 32 * 1024 * 1024;
  unsigned max_restarts = 5;
  std::size_t max_pending_requests = 10000;
  std::size_t max_replay_sessions = 64;
  std::chrono::seconds max_execution{0};        // of one execute, from any client; 0: none
  std::chrono::seconds interrupt_grace{5};      // after an interrupt at the limit, before a restart
  std::size_t journal_bytes = 8 * 1024 * 1024;  // the kernel's iopub journal; 0: none
};

struct kernel_options {
  std::string id;
  std::string owner;
  std::string sandbox_id;
  bool owns_sandbox = true;  // the sandbox was made for this kernel alone and ends with it
  kernelspec spec;
  std::map<std::string, std::string> env;           // from the request, merged over the spec's
  std::map<std::string, std::string> program_dirs;  // host dir -> where the sandbox shows it
  kernel_limits limits;
  std::string key;  // HMAC key of a kernel being re-attached; empty: a new random one
  // Its process, socket and file name in the sandbox's run dir, for a kernel
  // being re-attached; empty: made from the id.
  std::string file_name;
};

class kernel : public std::enable_shared_from_this<kernel> {
 public:
  using done_handler = std::function<void(std::string error)>;  // empty: success

  kernel(boost::asio::io_context& io, zmq::context_t& zmq, kernel_options opts, std::shared_ptr<sandbox> box);
  ~kernel();

  void start(done_handler done);
  // Takes back a kernel an earlier gateway started (same id, same key):
  // adopts its process in the sandbox, reconnects its channels and waits
  // for a kernel_info_reply, like a start without the launch.
  void reattach(done_handler done);
  // Lets go of the kernel and leaves it running for the next gateway:
  // clients are closed (1001, going away: 1012 is refused by some client
  // libraries), channels closed, nothing is signalled.
  void detach();
  void restart(done_handler done);
  void interrupt();
  // Ends the kernel: shutdown_request, SIGTERM, SIGKILL; closes clients.
  void shutdown(done_handler done);
  // Ends the kernel at once because its sandbox is going away (its processes
  // die with it); clients are closed with `why`.
  void terminate(const std::string& why);

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
  // Before reattach(): the executions an earlier gateway left running
  // (execution_record::to_stored_json texts). Once the kernel answers, each
  // is rebuilt from the kernel's iopub journal, which holds what was
  // published while no gateway listened, and goes on with live output.
  // `recorded(msg_id)`: whether the registry holds any record of that
  // execute. One that the journal shows beginning but that has no record
  // (it began just before the earlier gateway died, its row still queued)
  // is taken up from the journal alone.
  void take_up_executions(const std::vector<std::string>& stored,
                          std::function<bool(const std::string& msg_id)> recorded);

  // A warm pool's kernel becomes `owner`'s: restarts launch it with `env`
  // merged in, and `owns_sandbox` says whether its sandbox ends with it. The
  // running process gets `env` from apply_env().
  void claim(const std::string& owner, bool owns_sandbox, const std::map<std::string, std::string>& env);
  // Sets variables in the running kernel's process environment, with a
  // silent execute of the kernelspec's language (python or bash); `done`
  // gets an error for any other language, or when the execute fails.
  void apply_env(const std::map<std::string, std::string>& env, done_handler done);
  // Whether apply_env() can reach this kernel's language.
  [[nodiscard]] bool can_apply_env() const;
  // Runs `code` as a silent execute of the gateway's own: no client sees it,
  // no execution is recorded, the execution count stays.
  void execute_silently(const std::string& code, done_handler done);

  void attach(const std::shared_ptr<kernel_client>& client);
  // `unsent`: messages the client had not received; they go first into the
  // session's replay buffer.
  void detach(const std::shared_ptr<kernel_client>& client,
              std::vector<std::shared_ptr<outgoing>> unsent = {});
  // A client's message for the kernel. False: the kernel's input is behind,
  // and the client reads no more until its resume_input() is called.
  [[nodiscard]] bool from_client(const std::shared_ptr<kernel_client>& client, protocol::channel ch,
                                 protocol::message msg);
  // A client that has fallen behind holds the kernel's output back until it
  // catches up (each hold is released once). Only kernels whose iopub waits
  // instead of dropping (kernelspec iopub_backpressure) are held: the
  // gateway stops reading their iopub and the kernel waits; other kernels'
  // output keeps coming and waits in the clients' queues.
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

  struct pending_request {
    std::weak_ptr<kernel_client> client;
    std::string session_id;
    bool internal = false;  // the gateway's own probe, nudge or silent execute
    std::string msg_type;   // of the request
    std::string header;     // the request's header text, to parent a reply the kernel never sent
  };
  struct replay_buffer {
    std::deque<std::shared_ptr<outgoing>> messages;
    std::size_t bytes = 0;
    std::chrono::steady_clock::time_point expires;
    bool overflowed = false;
  };

  void connect_channels();
  void close_channels();
  void launch(done_handler done);
  void on_started(const std::string& error);
  void arm_start_timer(unsigned gen);
  void wait_for_sockets();
  void send_probe();
  void on_kernel_message(protocol::channel ch, std::vector<std::string>&& frames);
  // Feeds an iopub message to the execution log; false if it is not about a
  // taken-up execution or was already counted (kernel_takeover.cpp).
  bool record_taken_up(const protocol::message& msg, std::string_view status);
  // Reads the journal once it holds the first live iopub message (the
  // kernel writes it from a subscriber of its own, which may lag), then
  // records what came live meanwhile.
  void replay_journal();
  void forget_taken_up();  // the kernel ended or restarted: nothing is taken up
  void record(protocol::channel ch, const protocol::message& msg, std::string_view status);
  // The execution_state of an iopub status message; empty for any other.
  static std::string execution_state_of(const protocol::message& msg);
  void route_reply(const std::shared_ptr<outgoing>& out);
  void broadcast(const std::shared_ptr<outgoing>& out);
  void buffer_for(const std::string& session_id, const std::shared_ptr<outgoing>& out);
  void on_process_exit(const exit_status& st);
  send_result send_to_kernel(protocol::channel ch, const protocol::message& msg);
  // Answers a client's message that cannot be sent (see refusal_answers).
  void refuse(const std::shared_ptr<kernel_client>& client, protocol::channel ch,
              const protocol::message& msg, const std::string& why);
  [[nodiscard]] bool input_congested() const;  // a message waits in an input channel's queue
  void send_status(std::string_view state);
  void answer_lost_executes(const std::string& why);
  void track_execution(const std::string& msg_id, std::string_view state);
  void on_execution_limit(const std::string& msg_id);
  void stop_process(done_handler after_exit);
  void arm_stop_step();
  void finish_stop(const std::string& why = "kernel shut down");
  // The kernel's files in its sandbox's run dir, all named after its id
  // (a kernel shares the run dir with the other kernels of its sandbox).
  [[nodiscard]] std::vector<std::string> socket_names() const;
  void touch();
  void remember(const std::string& msg_id, pending_request req);
  std::shared_ptr<kernel_client> recipient(pending_request& req) const;
  zmq_channel* channel_for(protocol::channel ch);

  boost::asio::io_context& io_;
  zmq::context_t& zmq_;
  kernel_options opts_;
  std::shared_ptr<sandbox> box_;
  protocol::connection_info conn_;
  protocol::signer signer_;
  std::string session_ = "";  // the gateway's own session id for its messages
  std::string file_name_;     // of its process, sockets and connection file in the sandbox

  struct held_message {
    std::weak_ptr<kernel_client> client;
    protocol::channel ch;
    protocol::message msg;
  };
  static constexpr std::size_t max_held_messages = 1000;
  // iopub messages ZeroMQ reads ahead of a held kernel (see hold_output).
  static constexpr int held_iopub_messages = 64;

  socket_pins pins_;
  std::vector<held_message> held_;  // from clients while the kernel (re)starts
  input_waiters input_waiters_;     // clients that stopped reading until input can go on
  bool probe_answered_ = false;
  bool iopub_seen_ = false;
  std::shared_ptr<zmq_channel> shell_, control_, stdin_, iopub_;
  unsigned output_holds_ = 0;  // clients behind (see hold_output)
  std::vector<std::shared_ptr<kernel_client>> clients_;
  std::unordered_map<std::string, pending_request> pending_;
  std::unordered_map<std::string, done_handler> internal_replies_;  // silent executes by msg_id
  std::deque<std::string> pending_order_;
  std::map<std::string, replay_buffer> replay_;

  phase phase_ = phase::created;
  std::string state_ = "starting";
  // busy from the stored running rows of a taken-over kernel, until a live
  // status or its journal says otherwise
  bool state_presumed_ = false;
  std::chrono::system_clock::time_point last_activity_ = std::chrono::system_clock::now();
  std::chrono::steady_clock::time_point active_at_ = std::chrono::steady_clock::now();
  bool process_running_ = false;
  bool detached_ = false;    // left running for the next gateway
  unsigned generation_ = 0;  // bumps on each launch; stale exits are ignored
  unsigned auto_restarts_ = 0;
  done_handler start_done_;
  done_handler stop_done_;
  boost::asio::steady_timer start_timer_;
  boost::asio::steady_timer probe_timer_;
  boost::asio::steady_timer stop_timer_;
  execution_log executions_;
  // Executions an earlier gateway left running, or that the journal shows
  // it began: the ids of their messages already counted.
  struct taken_up_execution {
    std::unordered_set<std::string> counted;  // msg_ids recorded, from the journal or live
  };
  std::unordered_map<std::string, taken_up_execution> taken_up_;
  // Set on a re-attach until the journal is read (take_up_executions).
  std::function<bool(const std::string& msg_id)> recorded_;
  // Live iopub messages that came before the journal was read: recorded
  // after it, since the journal may find the executions they belong to.
  std::vector<protocol::message> journal_held_;
  std::size_t journal_held_bytes_ = 0;
  int journal_reads_ = 0;
  boost::asio::steady_timer journal_timer_;
  std::string running_execute_;                    // the execute the kernel is busy with, if tracked
  std::vector<std::function<void()>> when_ready_;  // REST executes waiting for a (re)start
  boost::asio::steady_timer execution_timer_;
  int stop_step_ = 0;
};

}  // namespace sandgate::gateway
