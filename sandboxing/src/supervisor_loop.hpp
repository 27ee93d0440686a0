// The supervisor's state and loop, shared by supervisor.cpp (events and the
// gateway connection), supervisor_requests.cpp (the gateway's requests) and
// supervisor_children.cpp (captured output, stdin, deadlines, exit reports).
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "child_cgroups.hpp"
#include "egress_port.hpp"
#include "sandboxing/control_connection.hpp"
#include "sandboxing/control_protocol.hpp"
#include "sandboxing/spawn.hpp"
#include "sandboxing/supervisor.hpp"
#include "sandboxing/unique_fd.hpp"
#include "stream_process.hpp"
#include "supervised_child.hpp"

namespace sandgate::sandboxing::detail {

using json = nlohmann::json;

inline constexpr std::size_t max_children = 256;
inline constexpr std::size_t max_queued_events = 1024;
inline constexpr std::size_t max_pending_stdin_bytes = 16u << 20;  // all children together
// Captured output is not read while more than this waits for the gateway:
// the children block on full pipes instead of the supervisor growing.
inline constexpr std::size_t output_high_water_bytes = 256u << 10;
inline constexpr std::chrono::milliseconds drain_after_exit{1000};  // then descendants holding a pipe die
inline constexpr std::chrono::milliseconds drain_after_kill{250};   // then the pipes are closed regardless
inline constexpr std::uint64_t max_timeout_ms = 366ull * 24 * 3600 * 1000;
inline constexpr int standalone_ttl_exit = 124;
inline constexpr int release_pages_after_ms = 500;  // of quiet after the start

class supervisor {
 public:
  explicit supervisor(const supervisor_config& config);
  int run();

 private:
  // What an epoll event on a child's descriptor is about.
  struct child_fd {
    supervised_child* child;
    int role;  // 0 stdout, 1 stderr, 2 stdin
  };

  // supervisor.cpp
  void watch(int fd, std::uint32_t events);
  void unwatch(int fd);
  void on_signal();
  void reap();
  void on_accept();
  void on_connection(std::uint32_t events);
  void update_connection_interest();
  void send_event(json message);  // queued while no gateway is connected
  void drop_connection();
  // The supervisor answers egress connections itself only while no gateway is connected.
  void update_egress_interest();
  void set_ttl(std::int64_t expires_at);

  // supervisor_requests.cpp
  void handle(const json& message);
  control::reply do_spawn(const json& message);
  control::reply do_signal(const json& message);
  control::reply do_kill(const json& message);
  control::reply do_extend(const json& message);
  // Egress opened while the sandbox runs: lo up, 127.0.0.1:3128 listening,
  // the proxy's variables in every later spawn. Idempotent.
  control::reply do_open_egress(const json& message);
  // Ends the sandbox: every process is killed (their exit events say the
  // sandbox ended, `why`: "expired" at the TTL, "ended" otherwise), then the loop.
  void finish(int code, const char* why = "ended");

  // supervisor_processes.cpp: the process API (control_protocol.hpp, "Processes").
  // The streams' descriptors for a spawn with "streams" (a pty, or pipes).
  void make_process_streams(const control::spawn_request& request, spawn_spec& spec, supervised_child& c,
                            stream_process& p, std::vector<unique_fd>& child_ends);
  control::reply do_attach(const json& message);
  control::reply do_release_fd(const json& message);
  control::reply do_processes(const json& message);
  // Answered at once when the process ended, else later (nothing now).
  std::optional<control::reply> do_wait(const json& message);
  control::reply do_write_stdin(const json& message);
  control::reply do_resize(const json& message);
  control::reply do_forget(const json& message);
  [[nodiscard]] json process_record(const stream_process& p) const;
  [[nodiscard]] std::uint64_t ring_bytes() const;  // all processes' ring capacities
  stream_process& process_of(const json& message, const char* op);
  void read_into_ring(supervised_child& c, int stream, std::size_t budget);
  // Bytes a stream may read now without overtaking its slowest attachment by more than its ring.
  [[nodiscard]] std::size_t ring_room(const stream_process& p, int stream) const;
  void resume_reading(stream_process& p);
  // True when a stream of the child's process is not read because its slowest attachment is a ring behind.
  [[nodiscard]] bool output_held_back(const supervised_child& c) const;
  void process_ended(const supervised_child& c, const control::exit_event& event);
  void on_attachment(int fd, std::uint32_t events);
  void pump_attachment(int fd);
  // The attachment at fd and its process; none (the attachment closed) when
  // either is gone.
  struct attachment_of {
    attachment& a;
    stream_process& p;
  };
  std::optional<attachment_of> attached_at(int fd);
  void pump_attachments(stream_process& p);
  void refill(attachment& a, const stream_process& p);
  void close_attachment(int fd);
  void set_interest(attachment& a, std::uint32_t interest);
  void on_attachment_frame(stream_process& p, process_stream::frame f);
  // Queues stdin for the process; false (nothing queued) when it takes none,
  // or, `bounded`, no more now (an attachment's is always taken: its socket
  // is not read while the queue is full, which bounds it).
  bool queue_stdin(stream_process& p, std::string_view bytes, bool close_after, bool bounded,
                   std::string& error);
  void feed_process_stdin(stream_process& p);
  void close_process_stdin(stream_process& p);
  void resize(stream_process& p, std::uint16_t cols, std::uint16_t rows);
  void answer_waits(const std::string& id, bool expired_only);
  void forget_process(const std::string& id);
  void trim_ended_processes();

  // supervisor_files.cpp: the file API (control_protocol.hpp, "Files").
  class as_sandbox_user;
  control::reply do_file(const json& message);
  // Keeps `fd` for the gateway to copy (until release_fd); returns its number.
  int hand_out(unique_fd fd);
  void abort_uploads();  // temporary files of uploads never committed
  // TCP ports listening in the sandbox's network namespace: [{"port", "address"}], from /proc/net/tcp{,6}.
  [[nodiscard]] json listening_ports() const;

  // supervisor_children.cpp
  void start_child_io(supervised_child& c);
  void on_child_fd(child_fd which, std::uint32_t events);
  // Reads up to budget bytes (0: until EAGAIN or EOF) of a captured stream.
  void read_output(supervised_child& c, int stream, std::size_t budget);
  void close_stream(supervised_child& c, int stream);
  void feed_stdin(supervised_child& c);
  void close_stdin(supervised_child& c);
  void child_ended(supervised_child& c, control::exit_event status);
  void report_exit(supervised_child& c);  // sends the exit event and forgets the child
  // SIGKILL to a child's process group and its cgroup (without one: its session).
  void kill_tree(const supervised_child& c);
  void on_child_timer();
  void arm_child_timer();
  bool output_blocked() const;
  void update_output_interest();
  void sweep_lingering();

  const supervisor_config& config_;
  std::int64_t expires_at_;
  unique_fd epoll_;
  unique_fd signals_;
  unique_fd ttl_timer_;
  unique_fd child_timer_;
  child_cgroups cgroups_;
  std::unique_ptr<control_connection> connection_;
  std::optional<egress_port> egress_;                 // 127.0.0.1:3128, listening once egress is on
  bool egress_watched_ = false;                       // in the epoll set (no gateway connected)
  std::map<std::string, std::string> egress_env_;     // egress opened later: under every spawn's env
  bool connection_wants_out_ = false;                 // EPOLLOUT registered for the connection
  std::map<std::string, supervised_child> children_;  // named children, until their exit is reported
  std::map<pid_t, std::string> names_;                // pids of named children still running
  std::map<int, child_fd> child_fds_;                 // children's pipes in the epoll set
  std::deque<std::pair<std::string, std::string>>
      lingering_;                                    // (id, cgroup) of ended children with processes left
  std::deque<json> undelivered_;                     // exit events while no gateway was connected
  std::map<std::string, stream_process> processes_;  // the process API's, running and ended
  std::map<int, attachment> attachments_;            // by the supervisor's socket
  std::map<int, unique_fd> handoffs_;                // descriptors for the gateway, until it copied them
  struct upload {
    unique_fd dir;     // where it goes
    std::string temp;  // its temporary name there
    std::string name;  // the name it takes when committed
  };
  std::map<std::string, upload> uploads_;  // uploads in progress, by a key of the parent path and temp name
  std::map<int, std::string> process_stdin_fds_;  // a process's stdin writer -> its id
  struct pending_wait {
    std::uint64_t req = 0;
    std::string id;
    steady_time deadline;
  };
  std::vector<pending_wait> waits_;
  std::uint64_t next_cgroup_serial_ = 1;
  std::uint64_t oom_kills_seen_ = 0;
  bool output_paused_ = false;
  bool deadlines_changed_ = false;
  bool pages_released_ = false;
  pid_t main_pid_ = 0;
  std::optional<int> exit_code_;
};

}  // namespace sandgate::sandboxing::detail
