#include "egress_proxy.hpp"

#include "../util/metrics.hpp"
#include "child_processes.hpp"

#include <gateway/log.hpp>
#include <sandboxing/control_protocol.hpp>

#include <boost/asio/write.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <system_error>

namespace sandgate::gateway {
namespace asio = boost::asio;
using json = nlohmann::json;

egress_proxy::egress_proxy(asio::io_context& io, std::filesystem::path program,
                           std::filesystem::path hosts_file, std::string resolver,
                           std::filesystem::path log_path)
    : io_(io),
      program_(std::move(program)),
      hosts_file_(std::move(hosts_file)),
      resolver_(std::move(resolver)),
      log_path_(std::move(log_path)),
      socket_(io),
      restart_timer_(io) {}

egress_proxy::~egress_proxy() {
  stopping_ = true;
  boost::system::error_code ec;
  socket_.close(ec);  // the proxy exits when its control socket closes
  if (pid_ > 0) ::kill(pid_, SIGTERM);
}

void egress_proxy::spawn() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    log::error("egress_proxy_failed",
               {{"error", std::string("socketpair: ") + std::generic_category().message(errno)}});
    return;
  }
  // Far from 3, so that the spawn's dup2 to 3 always clears close-on-exec.
  const int child_end = ::fcntl(fds[1], F_DUPFD_CLOEXEC, 10);
  ::close(fds[1]);
  spawn_spec spec;
  spec.argv = {program_.string(), "--control-fd", "3"};
  if (!hosts_file_.empty()) spec.argv.insert(spec.argv.end(), {"--hosts-file", hosts_file_.string()});
  if (!resolver_.empty()) spec.argv.insert(spec.argv.end(), {"--resolver", resolver_});
  spec.env = {{"PATH", "/usr/bin:/bin"}, {"LANG", "C.UTF-8"}};
  spec.log_path = log_path_.string();
  spec.inherit_fds = {child_end};  // its descriptor 3
  std::string error;
  pid_ = spawn_child(spec, error);
  ::close(child_end);
  if (pid_ < 0) {
    ::close(fds[0]);
    log::error("egress_proxy_failed", {{"error", error}});
    return;
  }
  socket_ = asio::local::stream_protocol::socket(io_);
  socket_.assign(asio::local::stream_protocol(), fds[0]);
  decoder_ = std::make_unique<sandboxing::control::frame_decoder>();
  write_queue_.clear();
  writing_ = false;
  log::info("egress_proxy_started", {{"pid", std::to_string(pid_)}});
  const pid_t pid = pid_;
  watch_child(pid, [this, pid](int status) {
    if (pid == pid_) on_exit(status);
  });
  do_read();
  for (auto& [id, set] : sets_) {
    set.proxy_has_listener = false;  // a new proxy has none yet
    send_set(set);
  }
}

void egress_proxy::on_exit(int status) {
  pid_ = -1;
  boost::system::error_code ec;
  socket_.close(ec);
  if (stopping_) return;
  ++gateway_metrics().egress_proxy_restarts;
  const std::string how = WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                              : "exit " + std::to_string(WEXITSTATUS(status));
  log::error("egress_proxy_ended", {{"how", how}});
  // At once the first times, then backing off to 5 s if it keeps dying.
  const auto delay = std::chrono::milliseconds(std::min(5000u, 100u << std::min(quick_restarts_++, 6u)));
  restart_timer_.expires_after(delay);
  restart_timer_.async_wait([this](const boost::system::error_code& wait_ec) {
    if (!wait_ec && !stopping_ && pid_ < 0) spawn();
  });
}

void egress_proxy::set(const std::string& sandbox_id, const std::string& principal,
                       sandboxing::unique_fd listener, const json& policy) {
  auto& entry = sets_[sandbox_id];
  if (listener) {
    entry.listener = std::move(listener);
    entry.proxy_has_listener = false;
  }
  entry.message = {{"op", "set"}, {"sandbox_id", sandbox_id}, {"principal", principal}, {"policy", policy}};
  if (pid_ < 0) return start();  // a proxy that starts sends every set
  send_set(entry);
}

void egress_proxy::send_set(sandbox_set& entry) {
  // The listener goes along once per proxy; later sets change the policy only.
  const bool with_listener = entry.listener && !entry.proxy_has_listener;
  entry.message["listener"] = with_listener;
  send(entry.message, with_listener ? entry.listener.get() : -1);
  entry.proxy_has_listener = entry.proxy_has_listener || with_listener;
}

bool egress_proxy::has_listener(const std::string& sandbox_id) const {
  const auto it = sets_.find(sandbox_id);
  return it != sets_.end() && it->second.listener;
}

void egress_proxy::start() {
  if (pid_ < 0 && restart_timer_.expiry() <= std::chrono::steady_clock::now()) spawn();
}

void egress_proxy::remove(const std::string& sandbox_id) {
  if (!sets_.erase(sandbox_id)) return;
  if (pid_ > 0) send({{"op", "remove"}, {"sandbox_id", sandbox_id}});
}

void egress_proxy::do_read() {
  socket_.async_read_some(
      asio::buffer(read_buf_), [this](const boost::system::error_code& ec, std::size_t n) {
        if (ec) return;  // its exit is handled by on_exit
        decoder_->feed(std::string_view(read_buf_.data(), n));
        for (;;) {
          std::error_code frame_ec;
          auto event = decoder_->next(frame_ec);
          if (frame_ec) {
            log::error("egress_proxy_bad_frame", {{"error", frame_ec.message()}});
            if (pid_ > 0) ::kill(pid_, SIGKILL);  // restarted like any proxy that dies
            return;
          }
          if (!event) break;
          const std::string kind = event->value("event", "");
          if (kind == "connection" && listener_) {
            quick_restarts_ = 0;  // it works
            listener_(*event);
          } else if (kind == "set" && !event->value("error", "").empty()) {
            log::error("egress_set_failed", {{"sandbox_id", event->value("sandbox_id", "")},
                                             {"error", event->value("error", "")}});
          }
        }
        do_read();
      });
}

void egress_proxy::send(const json& message, int descriptor) {
  frame f{sandboxing::control::encode_frame(message), {}};
  if (descriptor >= 0) {
    f.descriptor.reset(::fcntl(descriptor, F_DUPFD_CLOEXEC, 0));
    if (!f.descriptor) {
      log::error("egress_proxy_failed",
                 {{"error", std::string("dup(listener): ") + std::generic_category().message(errno)}});
      return;
    }
  }
  write_queue_.push_back(std::move(f));
  if (!writing_) do_write();
}

void egress_proxy::do_write() {
  if (write_queue_.empty() || !socket_.is_open()) {
    writing_ = false;
    return;
  }
  writing_ = true;
  if (write_queue_.front().descriptor) return write_with_descriptor();
  asio::async_write(socket_, asio::buffer(write_queue_.front().bytes),
                    [this](const boost::system::error_code& ec, std::size_t) {
                      if (ec) {
                        writing_ = false;
                        return;
                      }
                      write_queue_.pop_front();
                      do_write();
                    });
}

void egress_proxy::write_with_descriptor() {
  socket_.async_wait(asio::socket_base::wait_write, [this](const boost::system::error_code& ec) {
    if (ec) {
      writing_ = false;
      return;
    }
    auto& f = write_queue_.front();
    iovec io{f.bytes.data(), f.bytes.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &io;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    const int fd = f.descriptor.get();
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    const ssize_t n = ::sendmsg(socket_.native_handle(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return write_with_descriptor();
    if (n < 0) {
      writing_ = false;  // the proxy is gone; its exit is handled by on_exit
      return;
    }
    // The descriptor went with the first byte; the rest of the frame follows as it is.
    f.descriptor.reset();
    f.bytes.erase(0, static_cast<std::size_t>(n));
    if (f.bytes.empty()) write_queue_.pop_front();
    do_write();
  });
}

}  // namespace sandgate::gateway
