#include "child_cgroups.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <set>

#include "sandboxing/sys_error.hpp"

namespace sandgate::sandboxing::detail {
namespace {

// The pids listed in an open cgroup.procs (inside the reader's pid namespace).
std::vector<pid_t> read_pids(int fd) {
  std::vector<pid_t> pids;
  std::string text;
  char buffer[4096];
  for (off_t offset = 0;;) {
    const ssize_t n = ::pread(fd, buffer, sizeof buffer, offset);
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    offset += n;
  }
  const char* p = text.c_str();
  while (*p != '\0') {
    char* end = nullptr;
    const long pid = std::strtol(p, &end, 10);
    if (end == p) break;
    if (pid > 0) pids.push_back(static_cast<pid_t>(pid));
    p = end;
  }
  return pids;
}

}  // namespace

child_cgroups::leaf child_cgroups::create(std::uint64_t serial) const {
  leaf result;
  result.name = "c" + std::to_string(serial);
  if (::mkdirat(dir_.get(), result.name.c_str(), 0755) == -1 && errno != EEXIST) {
    throw sys_error("mkdirat(<sandbox cgroup>, " + result.name + ")", errno);
  }
  const std::string procs = result.name + "/cgroup.procs";
  result.procs.reset(::openat(dir_.get(), procs.c_str(), O_WRONLY | O_CLOEXEC));
  if (!result.procs) {
    const int error = errno;
    ::unlinkat(dir_.get(), result.name.c_str(), AT_REMOVEDIR);
    throw sys_error("openat(<sandbox cgroup>, " + procs + ", O_WRONLY)", error);
  }
  if (version_ == cgroup_version::v2) {
    result.dir.reset(::openat(dir_.get(), result.name.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  }
  return result;
}

void child_cgroups::kill(const std::string& name) const {
  if (!dir_ || name.empty()) return;
  if (version_ == cgroup_version::v2) {
    unique_fd fd(::openat(dir_.get(), (name + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC));
    if (fd && ::write(fd.get(), "1", 1) == 1) return;  // the kernel kills the whole subtree at once
  }
  unique_fd procs(::openat(dir_.get(), (name + "/cgroup.procs").c_str(), O_RDONLY | O_CLOEXEC));
  if (!procs) return;
  // A process that has SIGKILL pending cannot complete a fork, so every
  // process not yet seen was forked before its parent was killed: the
  // rounds end once a round lists nothing new (bounded by pids.max).
  std::set<pid_t> killed;
  for (int round = 0; round < 1000; ++round) {
    bool fresh = false;
    for (const pid_t pid : read_pids(procs.get())) {
      ::kill(pid, SIGKILL);
      fresh = killed.insert(pid).second || fresh;
    }
    if (!fresh) return;
  }
}

bool child_cgroups::remove(const std::string& name) const {
  if (!dir_ || name.empty()) return true;
  return ::unlinkat(dir_.get(), name.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT;
}

}  // namespace sandgate::sandboxing::detail
