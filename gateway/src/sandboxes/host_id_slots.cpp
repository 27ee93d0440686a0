#include "host_id_slots.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

namespace sandgate::gateway {
namespace {

// An exclusive lock on `path` without waiting, or an empty descriptor when
// another open file holds it.
sandboxing::unique_fd try_lock(const std::filesystem::path& path) {
  sandboxing::unique_fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) throw std::runtime_error("open(" + path.string() + "): " + std::generic_category().message(errno));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return fd;
  if (errno == EWOULDBLOCK) return {};
  throw std::runtime_error("flock(" + path.string() +
                           ", LOCK_EX|LOCK_NB): " + std::generic_category().message(errno));
}

}  // namespace

host_id_slots::host_id_slots(unsigned node_id, std::filesystem::path lock_dir)
    : first_(node_id * host_id_slots_per_node), lock_dir_(std::move(lock_dir)) {
  std::error_code ec;
  std::filesystem::create_directories(lock_dir_, ec);
  try {
    if (ec) throw std::runtime_error("create_directories(" + lock_dir_.string() + "): " + ec.message());
    ::chmod(lock_dir_.c_str(), 0700);
    node_lock_ = try_lock(lock_dir_ / ("node-" + std::to_string(node_id) + ".lock"));
    node_shared_ = !node_lock_;
  } catch (const std::exception& e) {
    unavailable_ = e.what();
    lock_dir_.clear();
  }
}

std::optional<claimed_slot> host_id_slots::claim() {
  for (unsigned slot = first_; slot < first_ + host_id_slots_per_node; ++slot) {
    if (used_.count(slot)) continue;
    sandboxing::unique_fd lock;
    if (!lock_dir_.empty()) {
      lock = try_lock(lock_dir_ / (std::to_string(slot) + ".lock"));
      if (!lock) continue;  // another gateway's sandbox has it
    }
    used_.insert(slot);
    return claimed_slot{slot, std::move(lock)};
  }
  return std::nullopt;
}

}  // namespace sandgate::gateway
