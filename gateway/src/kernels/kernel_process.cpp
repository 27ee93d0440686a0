#include "kernel_process.hpp"

#include "socket_pins.hpp"

#include <gateway/log.hpp>
#include <jupyter_protocol/journal.hpp>

#include <boost/asio/post.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <csignal>

namespace sandgate::gateway {
namespace {

std::string replace_all(std::string s, std::string_view from, const std::string& to) {
  for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
  return s;
}

}  // namespace

kernel_process::kernel_process(boost::asio::io_context& io, std::string kernel_id,
                               std::shared_ptr<sandbox> box, std::string file_name,
                               const kernel_limits& limits)
    : kernel_id_(std::move(kernel_id)),
      box_(std::move(box)),
      file_name_(std::move(file_name)),
      shutdown_grace_(limits.shutdown_grace),
      start_timer_(io),
      stop_timer_(io) {}

// ipc://<ip>-<port>, with the ports the connection file names.
std::vector<std::string> kernel_process::socket_names() const {
  return {file_name_ + "-1", file_name_ + "-4", file_name_ + "-3", file_name_ + "-2"};
}

spawn_request kernel_process::spawn_request_for(const kernel_options& opts) const {
  const auto conn_inside = box_->run_dir_inside() / (file_name_ + ".json");
  spawn_request req;
  req.name = file_name_;
  for (const auto& a : opts.spec.argv) {
    std::string arg = replace_all(replace_all(a, "{connection_file}", conn_inside.string()), "{resource_dir}",
                                  opts.spec.dir.string());
    for (const auto& [host, inside] : opts.program_dirs)  // a program the sandbox shows elsewhere
      if (arg.rfind(host + "/", 0) == 0) arg = inside + arg.substr(host.size());
    req.argv.push_back(std::move(arg));
  }
  req.env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"},
             {"LANG", "C.UTF-8"},
             {"HOME", box_->workspace_inside()},
             {"JPY_SESSION_NAME", opts.id}};
  for (const auto& [k, v] : opts.spec.env)
    req.env[k] = v;
  for (const auto& [k, v] : opts.env)
    req.env[k] = v;
  if (opts.limits.journal_bytes > 0 && opts.spec.iopub_journal) {
    req.env[protocol::journal_path_env] = (box_->run_dir_inside() / (file_name_ + ".journal")).string();
    req.env[protocol::journal_bytes_env] = std::to_string(opts.limits.journal_bytes);
  }
  req.cwd = box_->workspace_inside();
  return req;
}

void kernel_process::launch(const kernel_options& opts, const protocol::connection_info& conn,
                            done_handler spawned, exit_handler exited) {
  // Only single names inside the run dir, which the sandbox user owns: no
  // path the gateway uses there goes through a directory that code in the
  // sandbox could swap for a link.
  const auto conn_host = box_->run_dir_host() / (file_name_ + ".json");
  try {
    protocol::write_connection_file(conn_host, conn);
    box_->give_file(conn_host);
    socket_pins::clear(box_->run_dir_host(), socket_names());
  } catch (const std::exception& e) {
    return spawned(std::string("cannot prepare the kernel: ") + e.what());
  }
  exited_ = std::move(exited);
  const unsigned gen = ++generation_;
  std::weak_ptr<kernel_process> weak = weak_from_this();
  box_->spawn(
      spawn_request_for(opts),
      [weak, spawned = std::move(spawned)](const std::string& error) {
        auto self = weak.lock();
        if (self && error.empty()) self->running_ = true;
        spawned(error);
      },
      [weak, gen](const exit_status& st) {
        if (auto self = weak.lock()) self->on_exit(gen, st);
      });
}

void kernel_process::reclaim(done_handler found, exit_handler exited) {
  exited_ = std::move(exited);
  const unsigned gen = ++generation_;
  std::weak_ptr<kernel_process> weak = weak_from_this();
  box_->reclaim(
      file_name_,
      [weak, found = std::move(found)](const std::string& error) {
        auto self = weak.lock();
        if (self && error.empty()) self->running_ = true;
        found(error);
      },
      [weak, gen](const exit_status& st) {
        if (auto self = weak.lock()) self->on_exit(gen, st);
      });
}

void kernel_process::expect_ready_within(std::chrono::seconds limit, std::function<void()> late) {
  start_timer_.expires_after(limit);
  start_timer_.async_wait(
      [weak = weak_from_this(), late = std::move(late)](const boost::system::error_code& ec) {
        if (weak.lock() && !ec) late();
      });
}

void kernel_process::signal(int sig) {
  box_->signal(file_name_, sig);
}

void kernel_process::on_exit(unsigned generation, const exit_status& st) {
  if (generation != generation_) return;
  running_ = false;
  stop_timer_.cancel();
  log::info("kernel_process_exited", {{"kernel_id", kernel_id_}, {"status", st.describe()}});
  if (auto stopped = std::exchange(stopped_, nullptr)) {
    stop_steps_.clear();
    return stopped();
  }
  if (exited_) exited_(st);
}

void kernel_process::stop(std::function<void()> ask, std::function<void()> after_exit) {
  if (!running_) {
    boost::asio::post(stop_timer_.get_executor(), std::move(after_exit));  // never inside the caller's call
    return;
  }
  stopped_ = std::move(after_exit);
  // Taken from the back: the shutdown_request first, then SIGTERM, then
  // SIGKILL; an exit still unheard of a grace after SIGKILL (the process is
  // stuck in the kernel, or its sandbox lost track of it) does not hold
  // the caller forever.
  stop_steps_ = {
      [this] {
        log::warn("kernel_exit_unconfirmed", {{"kernel_id", kernel_id_}});
        running_ = false;
        if (auto stopped = std::exchange(stopped_, nullptr)) stopped();
      },
      [this] { signal(SIGKILL); },
      [this] { signal(SIGTERM); },
      std::move(ask),
  };
  next_stop_step();
}

void kernel_process::next_stop_step() {
  if (stop_steps_.empty()) return;
  auto step = std::move(stop_steps_.back());
  stop_steps_.pop_back();
  step();
  if (stop_steps_.empty()) return;
  stop_timer_.expires_after(shutdown_grace_);
  stop_timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
    if (auto self = weak.lock(); self && !ec && self->running_) self->next_stop_step();
  });
}

void kernel_process::forget() {
  ++generation_;  // an exit heard from now on (the sandbox ending under it) is no news
  running_ = false;
  stopped_ = nullptr;
  stop_steps_.clear();
  start_timer_.cancel();
  stop_timer_.cancel();
}

void kernel_process::remove_traces() {
  box_->kill_tree(file_name_);  // what the kernel left running, daemons included
  socket_pins::clear(box_->run_dir_host(), socket_names());
  for (const char* suffix : {".json", ".journal.0", ".journal.1"})
    ::unlinkat(AT_FDCWD, (box_->run_dir_host() / (file_name_ + suffix)).c_str(), 0);
}

}  // namespace sandgate::gateway
