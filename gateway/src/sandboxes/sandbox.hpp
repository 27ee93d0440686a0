#pragma once
// Where a kernel's processes run. A sandbox spawns named processes, signals
// their process groups, tells how each ended, and owns a run dir (for the
// connection file and ipc sockets) and a workspace. Two kinds: a
// supervised sandbox (sandgate-sandbox, the default) and the host itself,
// only for kernelspecs an operator exempted explicitly.

#include <sandboxing/control_protocol.hpp>
#include <sandboxing/unique_fd.hpp>

#include <sys/types.h>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::gateway {

// How a spawned process ended.
struct exit_status {
  int code = -1;           // exit code, or -1
  int signal = 0;          // terminating signal, or 0
  bool oom = false;        // killed by the sandbox's memory limit
  bool timed_out = false;  // killed at its spawn_request::timeout
  bool truncated = false;  // captured output passed spawn_request::output_limit
  // Set when the process ended because its sandbox did: why the sandbox
  // ended ("deleted", "expired", "culled", "ended"), as sandbox_manager says.
  std::string sandbox_ended;

  [[nodiscard]] std::string describe() const;  // "oom", "signal 9", "exit 1"
};

// What ended a sandbox, for people: "deleted" -> "the sandbox was deleted".
[[nodiscard]] std::string describe_sandbox_end(const std::string& reason);

struct spawn_request {
  std::string name;  // unique within the sandbox
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // the whole environment; nothing is inherited
  std::string cwd;                         // a path as the process sees it
  // Commands: stdout and stderr come back through the output handler (at
  // most output_limit bytes each), stdin_data is fed to stdin, and at the
  // timeout the process and all its descendants are killed.
  bool capture = false;
  std::string stdin_data;
  std::size_t output_limit = 1024 * 1024;
  std::optional<std::chrono::milliseconds> timeout;
};

class sandbox {
 public:
  using exit_handler = std::function<void(const exit_status&)>;
  using spawn_handler = std::function<void(std::string error)>;  // empty error: started
  using output_handler = std::function<void(bool is_stderr, std::string_view data)>;
  using end_handler = std::function<void(std::string why)>;

  virtual ~sandbox() = default;

  // Every output chunk of a captured process arrives before its exit.
  virtual void spawn(const spawn_request& req, spawn_handler on_spawned, exit_handler on_exit,
                     output_handler on_output = nullptr) = 0;
  // Takes charge of a named process started by an earlier gateway: once the
  // sandbox answers, `on_found` gets an empty error if it still runs (its
  // exit then reaches `on_exit`), or why it cannot be reclaimed.
  virtual void reclaim(const std::string& name, spawn_handler on_found, exit_handler on_exit) = 0;
  // Sends `sig` to the process group of the named process.
  virtual void signal(const std::string& name, int sig) = 0;
  // Kills the named process and every process it started, wherever they went.
  virtual void kill_tree(const std::string& name) = 0;
  // Moves the sandbox's end of life (unix seconds); its supervisor enforces it.
  virtual void extend(std::int64_t expires_at, spawn_handler done) = 0;
  // Opens egress while the sandbox runs: its programs reach the egress proxy
  // on 127.0.0.1:3128 from now on, and processes spawned later get the
  // proxy variables. `done` gets an empty error once that is so.
  virtual void open_egress(spawn_handler done) = 0;
  // A copy of the sandbox's socket on 127.0.0.1:3128 (in its network
  // namespace), for the egress proxy to accept on; invalid with `error` set
  // when there is none.
  virtual sandboxing::unique_fd copy_egress_listener(std::string& error) = 0;
  // A request of the process API (control_protocol.hpp, "Processes": spawn
  // with streams, attach, release_fd, processes, wait, write_stdin, resize,
  // forget); `done` gets the supervisor's reply (ok false with the error when
  // the sandbox cannot answer). Sent after whatever was asked before it.
  virtual void call(nlohmann::json op, std::function<void(const sandboxing::control::reply&)> done) = 0;
  // A copy of the supervisor's descriptor `fd` (an attachment's end),
  // invalid with `error` set when it cannot be had.
  virtual sandboxing::unique_fd copy_descriptor(int fd, std::string& error) = 0;
  // A TCP socket in the sandbox's network namespace (sandbox_socket.hpp),
  // for reaching a port a program inside listens on; invalid with `error`.
  virtual sandboxing::unique_fd port_socket(std::string& error) = 0;
  // Calls `done` once the sandbox can run processes (empty error) or failed to start.
  virtual void when_ready(spawn_handler done) = 0;
  // Called once if the sandbox ends by itself (TTL, a crash), not after destroy().
  virtual void on_end(end_handler handler) = 0;
  // Kills everything inside and releases the sandbox; idempotent. The exit
  // handlers of processes still running are called at once, with
  // exit_status::sandbox_ended = `why` ("deleted", "expired", ...).
  virtual void destroy(const std::string& why) = 0;
  // Lets go of the sandbox and leaves it running, for the next gateway to
  // reclaim (false: this kind cannot outlive the gateway; nothing was done).
  // destroy() afterwards does nothing.
  virtual bool leave_running() = 0;
  // An O_PATH descriptor of the workspace directory, for the files API
  // (the caller closes it), or -1 with errno set.
  [[nodiscard]] virtual int open_workspace() const = 0;

  // The run dir as the gateway sees it, and as processes inside see it.
  [[nodiscard]] virtual std::filesystem::path run_dir_host() const = 0;
  [[nodiscard]] virtual std::filesystem::path run_dir_inside() const = 0;
  [[nodiscard]] virtual std::string workspace_inside() const = 0;
  // The host uid that owns what the sandbox's processes create (their ipc sockets).
  [[nodiscard]] virtual uid_t owner_uid() const = 0;
  [[nodiscard]] virtual gid_t owner_gid() const = 0;
  // Makes a file the gateway wrote in the run dir readable by the sandbox user only.
  virtual void give_file(const std::filesystem::path& host_path) = 0;
};

}  // namespace sandgate::gateway
