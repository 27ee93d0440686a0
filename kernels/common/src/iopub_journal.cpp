#include "sandgate_kernels/iopub_journal.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace sandgate::kernels {
namespace {

constexpr std::size_t default_budget = 8 * 1024 * 1024;
constexpr std::size_t min_budget = 64 * 1024;

}  // namespace

std::unique_ptr<iopub_journal> iopub_journal::from_environment() {
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
  return std::make_unique<iopub_journal>(path, budget);
}

iopub_journal::iopub_journal(std::string base_path, std::size_t budget_bytes)
    : base_path_(std::move(base_path)), half_budget_(budget_bytes / 2) {
  // A new process starts a new journal: the other file may hold an earlier
  // run's messages, whose sequence numbers would interleave with ours.
  ::unlink((base_path_ + ".1").c_str());
  if (open_file(0)) set_iopub_tap(this);
}

iopub_journal::~iopub_journal() {
  set_iopub_tap(nullptr);
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

void iopub_journal::on_frame(zmq_msg_t& frame, bool more) {
  builder_.add_frame({static_cast<const char*>(zmq_msg_data(&frame)), zmq_msg_size(&frame)});
  if (!more) write_record(builder_.finish(++seq_));
}

void iopub_journal::write_record(std::string_view record) {
  if (written_ > 0 && written_ + record.size() > half_budget_ && !open_file(1 - which_)) return;
  while (!record.empty()) {
    const ssize_t n = ::write(fd_, record.data(), record.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // Full (the run dir is a bounded tmpfs): start over in the other file.
      open_file(1 - which_);
      return;
    }
    record.remove_prefix(static_cast<std::size_t>(n));
    written_ += static_cast<std::size_t>(n);
  }
}

}  // namespace sandgate::kernels
