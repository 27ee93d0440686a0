#pragma once
// Where a kernel's processes run. A sandbox spawns named processes, signals
// their process groups, tells how each ended, and owns a run dir (for the
// connection file and ipc sockets) and a workspace. Two kinds: a
// supervised sandbox (sandgate-sandbox, the default) and the host itself,
// only for kernelspecs an operator exempted explicitly.

#include <sys/types.h>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace sandgate::gateway {

// How a spawned process ended.
struct exit_status {
  int code = -1;     // exit code, or -1
  int signal = 0;    // terminating signal, or 0
  bool oom = false;  // killed by the sandbox's memory limit

  [[nodiscard]] std::string describe() const;  // "oom", "signal 9", "exit 1"
};

struct spawn_request {
  std::string name;  // unique within the sandbox
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // the whole environment; nothing is inherited
  std::string cwd;                         // a path as the process sees it
};

class sandbox {
 public:
  using exit_handler = std::function<void(const exit_status&)>;
  using spawn_handler = std::function<void(std::string error)>;  // empty error: started

  virtual ~sandbox() = default;

  virtual void spawn(const spawn_request& req, spawn_handler on_spawned, exit_handler on_exit) = 0;
  // Sends `sig` to the process group of the named process.
  virtual void signal(const std::string& name, int sig) = 0;
  // Kills everything inside and releases the sandbox; idempotent.
  virtual void destroy() = 0;

  // The run dir as the gateway sees it, and as processes inside see it.
  [[nodiscard]] virtual std::filesystem::path run_dir_host() const = 0;
  [[nodiscard]] virtual std::filesystem::path run_dir_inside() const = 0;
  [[nodiscard]] virtual std::string workspace_inside() const = 0;
  // The host uid that owns what the sandbox's processes create (their ipc sockets).
  [[nodiscard]] virtual uid_t owner_uid() const = 0;
  // Makes a file the gateway wrote in the run dir readable by the sandbox user only.
  virtual void hand_over(const std::filesystem::path& host_path) = 0;
};

}  // namespace sandgate::gateway
