#include "sandgate_kernels/iopub_journal.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include <jupyter_protocol/journal.hpp>
#include <xeus/xmiddleware.hpp>
#include <zmq_addon.hpp>

namespace sandgate::kernels {
namespace {

constexpr std::size_t default_budget = 8 * 1024 * 1024;
constexpr std::size_t min_budget = 64 * 1024;

}  // namespace

std::unique_ptr<iopub_journal> iopub_journal::from_environment(const xeus::xconfiguration& config) {
  const char* path_env = std::getenv(protocol::journal_path_env);
  const char* bytes_env = std::getenv(protocol::journal_bytes_env);
  const std::string path = path_env ? path_env : "";
  const std::string bytes = bytes_env ? bytes_env : "";
  // The kernel's business, not its users': cells and commands do not see them.
  ::unsetenv(protocol::journal_path_env);
  ::unsetenv(protocol::journal_bytes_env);
  if (path.empty()) return nullptr;
  std::size_t budget = default_budget;
  if (!bytes.empty()) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(bytes.c_str(), &end, 10);
    if (*end == '\0') budget = n < min_budget ? min_budget : static_cast<std::size_t>(n);
  }
  return std::make_unique<iopub_journal>(
      xeus::get_end_point(config.m_transport, config.m_ip, config.m_iopub_port), path, budget);
}

iopub_journal::iopub_journal(std::string endpoint, std::string base_path, std::size_t budget_bytes)
    : base_path_(std::move(base_path)), half_budget_(budget_bytes / 2) {
  // A new process starts a new journal: the other file may hold an earlier
  // run's messages, whose sequence numbers would interleave with ours.
  ::unlink((base_path_ + ".1").c_str());
  if (!open_file(0)) return;
  thread_ = std::thread([this, endpoint = std::move(endpoint)]() mutable { run(std::move(endpoint)); });
}

iopub_journal::~iopub_journal() {
  context_.shutdown();  // the thread's recv ends with ETERM
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) ::close(fd_);
}

bool iopub_journal::open_file(int which) {
  const std::string path = base_path_ + "." + std::to_string(which);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return false;
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  which_ = which;
  written_ = 0;
  return true;
}

void iopub_journal::write_record(const std::string& record) {
  if (written_ > 0 && written_ + record.size() > half_budget_ && !open_file(1 - which_)) return;
  std::string_view rest = record;
  while (!rest.empty()) {
    const ssize_t n = ::write(fd_, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // Full (the run dir is a bounded tmpfs): start over in the other file.
      open_file(1 - which_);
      return;
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
    written_ += static_cast<std::size_t>(n);
  }
}

void iopub_journal::run(std::string endpoint) {
  try {
    zmq::socket_t sub(context_, zmq::socket_type::sub);
    sub.set(zmq::sockopt::rcvhwm, 0);
    sub.set(zmq::sockopt::linger, 0);
    sub.set(zmq::sockopt::subscribe, "");
    sub.connect(endpoint);
    std::uint64_t seq = 0;
    std::vector<zmq::message_t> parts;
    std::vector<std::string_view> frames;
    std::string record;
    for (;;) {
      parts.clear();
      if (!zmq::recv_multipart(sub, std::back_inserter(parts))) continue;
      frames.clear();
      for (const auto& p : parts)
        frames.emplace_back(static_cast<const char*>(p.data()), p.size());
      record.clear();
      protocol::append_journal_record(record, ++seq, frames);
      write_record(record);
    }
  } catch (const zmq::error_t&) {  // ETERM: the kernel is exiting
  }
}

}  // namespace sandgate::kernels
