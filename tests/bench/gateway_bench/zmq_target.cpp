// The floor: the benchmark launches the kernel from its kernelspec argv with
// an ipc:// connection file (as Sandgate does) and talks to it directly.
#include "conversation.hpp"
#include "targets.hpp"
#include "zmq_connection.hpp"

#include <jupyter_protocol/connection_file.hpp>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>
#include <vector>

extern char** environ;

namespace sandgate::bench {
namespace fs = std::filesystem;

namespace {

// More than three sockets a kernel, for concurrency 128 and up (libzmq's
// default is 1023 per context).
constexpr int max_sockets = 4096;

struct kernelspec {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  fs::path dir;
};

kernelspec read_kernelspec(const fs::path& dir) {
  std::ifstream in(dir / "kernel.json");
  if (!in) throw bench_error("cannot read " + (dir / "kernel.json").string());
  const auto j = nlohmann::json::parse(in);
  kernelspec spec;
  spec.argv = j.at("argv").get<std::vector<std::string>>();
  if (j.contains("env")) spec.env = j["env"].get<std::map<std::string, std::string>>();
  spec.dir = dir;
  return spec;
}

std::string substitute(std::string s, std::string_view from, const std::string& to) {
  for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
  return s;
}

pid_t spawn_kernel(const kernelspec& spec, const fs::path& connection_file, const fs::path& log_file) {
  std::vector<std::string> args;
  for (const auto& a : spec.argv)
    args.push_back(substitute(substitute(a, "{connection_file}", connection_file.string()), "{resource_dir}",
                              spec.dir.string()));
  // As Sandgate does: a HOME of its own per kernel (IPython keeps its
  // history database there; kernels sharing one wait on its lock).
  const fs::path home = connection_file.parent_path() / "home";
  fs::create_directories(home);
  std::map<std::string, std::string> env = {
      {"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"LANG", "C.UTF-8"}, {"HOME", home.string()}};
  for (const auto& [k, v] : spec.env)
    env[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env)
    env_strings.push_back(k + "=" + v);
  std::vector<char*> argv_p, env_p;
  for (auto& a : args)
    argv_p.push_back(a.data());
  argv_p.push_back(nullptr);
  for (auto& e : env_strings)
    env_p.push_back(e.data());
  env_p.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // A session of its own, as Sandgate and jupyter_client give their kernels
  // (with CFS autogroups this also decides the kernel's share of the CPUs).
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv_p[0], &actions, &attr, argv_p.data(), env_p.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw bench_error("posix_spawnp(" + args[0] + "): " + std::strerror(rc));
  return pid;
}

class zmq_session final : public kernel_session {
 public:
  zmq_session(fs::path dir, pid_t pid) : dir_(std::move(dir)), pid_(pid) {}
  ~zmq_session() override {
    if (connection_) {
      try {
        connection_->send(protocol::channel::control,
                          protocol::make_message("shutdown_request", R"({"restart":false})",
                                                 connection_->session(), "bench"));
      } catch (const std::exception&) {
      }
    }
    int status = 0;
    bool exited = false;
    for (int i = 0; i < 300 && !exited; ++i) {  // 3 s, then SIGKILL
      exited = ::waitpid(pid_, &status, WNOHANG) == pid_;
      if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!exited) {
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
    connection_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  kernel_connection& connection() override { return *connection_; }
  void connect(zmq::context_t& ctx, const protocol::connection_info& info) {
    connection_ = std::make_unique<zmq_connection>(ctx, info, protocol::new_uuid4());
  }

 private:
  fs::path dir_;
  pid_t pid_;
  std::unique_ptr<zmq_connection> connection_;
};

class zmq_target final : public target {
 public:
  explicit zmq_target(const zmq_options& opts)
      : spec_(read_kernelspec(opts.kernelspec_dir)), start_timeout_(opts.start_timeout) {
    ctx_.set(zmq::ctxopt::max_sockets, max_sockets);
  }

  std::unique_ptr<kernel_session> start_kernel() override {
    const auto started = bench_clock::now();
    std::string dir_template = (fs::temp_directory_path() / "sgbench-XXXXXX").string();
    if (!::mkdtemp(dir_template.data())) throw bench_error("mkdtemp failed");
    const fs::path dir = dir_template;
    protocol::connection_info info;
    info.transport = "ipc";
    info.ip = (dir / "k").string();
    info.shell_port = 1;
    info.iopub_port = 2;
    info.stdin_port = 3;
    info.control_port = 4;
    info.hb_port = 5;
    info.key = protocol::new_uuid4();
    std::erase(info.key, '-');
    const fs::path connection_file = dir / "connection.json";
    protocol::write_connection_file(connection_file, info);
    const pid_t pid = spawn_kernel(spec_, connection_file, dir / "kernel.log");
    auto session = std::make_unique<zmq_session>(dir, pid);
    session->created_ms = ms_between(started, bench_clock::now());
    session->connect(ctx_, info);
    session->connected_ms = ms_between(started, bench_clock::now());
    (void)kernel_info(session->connection(), start_timeout_);
    session->start_ms = ms_between(started, bench_clock::now());
    sync_iopub(session->connection(), start_timeout_, std::chrono::milliseconds(100));
    return session;
  }

  std::unique_ptr<kernel_session> create_kernel() override { return start_kernel(); }
  std::optional<double> pool_metric(const std::string&) override { return std::nullopt; }
  pid_t server_pid() const override { return 0; }

 private:
  kernelspec spec_;
  std::chrono::seconds start_timeout_;
  zmq::context_t ctx_{1};
};

}  // namespace

std::unique_ptr<target> make_zmq_target(const zmq_options& opts) {
  return std::make_unique<zmq_target>(opts);
}

}  // namespace sandgate::bench
