#include "sandboxing/cgroups.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <utility>

#include "sandboxing/sys_error.hpp"

namespace sandgate::sandboxing {
namespace {

bool exists(const std::string& path) {
  return ::access(path.c_str(), F_OK) == 0;
}

void make_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) == -1 && errno != EEXIST) throw sys_error("mkdir(" + path + ")", errno);
}

std::vector<pid_t> read_procs(const std::string& dir) {
  std::vector<pid_t> pids;
  try {
    std::istringstream in(read_file(dir + "/cgroup.procs"));
    pid_t pid;
    while (in >> pid)
      pids.push_back(pid);
  } catch (const sys_error&) {
  }
  return pids;
}

// The cgroups directly below dir (the supervisor's per-child ones).
std::vector<std::string> child_dirs(const std::string& dir) {
  std::vector<std::string> children;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return children;
  while (const dirent* entry = ::readdir(d)) {
    if (entry->d_type == DT_DIR && entry->d_name[0] != '.') children.push_back(dir + "/" + entry->d_name);
  }
  ::closedir(d);
  return children;
}

// rmdir of a cgroup and the cgroups below it, deepest first (bounded depth).
bool remove_dir_tree(const std::string& dir, int depth = 0) {
  if (depth < 8) {
    for (const auto& child : child_dirs(dir))
      remove_dir_tree(child, depth + 1);
  }
  return ::rmdir(dir.c_str()) == 0 || errno == ENOENT;
}

void sleep_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000};
  ::nanosleep(&ts, nullptr);
}

const char* const v1_controllers[] = {"memory", "pids", "cpu"};

// The words of a cgroup v2 list file ("cpuset cpu io memory pids").
std::set<std::string> words(const std::string& text) {
  std::set<std::string> result;
  std::istringstream in(text);
  std::string word;
  while (in >> word)
    result.insert(word);
  return result;
}

}  // namespace

std::string_view to_string(cgroup_version version) {
  switch (version) {
    case cgroup_version::v1:
      return "v1";
    case cgroup_version::v2:
      return "v2";
    case cgroup_version::none:
      break;
  }
  return "none";
}

cgroup_layout detect_cgroups(const std::string& root) {
  cgroup_layout layout;
  layout.root = root;
  bool unified = false;
  if (exists(root + "/cgroup.controllers")) {
    try {
      const auto controllers = words(read_file(root + "/cgroup.controllers"));
      unified = true;
      if (controllers.contains("memory") && controllers.contains("pids")) {
        layout.version = cgroup_version::v2;
        return layout;
      }
    } catch (const sys_error&) {
    }
  }
  if (exists(root + "/memory/memory.limit_in_bytes") && exists(root + "/pids/cgroup.procs")) {
    layout.version = cgroup_version::v1;
  } else if (unified) {
    layout.version = cgroup_version::v2;
    layout.partial = true;
  }
  return layout;
}

std::uint64_t parse_oom_kill_count(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string key;
  std::uint64_t value = 0;
  while (in >> key >> value) {
    if (key == "oom_kill") return value;
  }
  return 0;
}

std::uint64_t read_oom_kill_count(int fd) {
  if (fd < 0) return 0;
  char buffer[1024];
  const ssize_t n = ::pread(fd, buffer, sizeof buffer - 1, 0);
  if (n <= 0) return 0;
  return parse_oom_kill_count(std::string_view(buffer, static_cast<std::size_t>(n)));
}

cgroup cgroup::create(const cgroup_layout& layout, const std::string& parent, const std::string& id,
                      const limits& l) {
  cgroup group;
  group.version_ = layout.version;
  const auto quota_us = static_cast<long long>(std::llround(l.cpu * 100000.0));
  if (layout.version == cgroup_version::v2) {
    const std::string parent_dir = layout.root + "/" + parent;
    make_dir(parent_dir);
    // memory and pids are required (unless the layout is partial: then the
    // cgroup only tracks and kills processes); cpu is used when it can be
    // enabled (it cannot while realtime processes sit in non-root cgroups).
    std::set<std::string> usable;
    const auto available = words(read_file(layout.root + "/cgroup.controllers"));
    for (const char* controller : {"memory", "pids", "cpu"}) {
      if (available.contains(controller)) {
        usable.insert(controller);
      } else if (layout.partial) {
        std::fprintf(stderr, "sandgate-sandbox: cgroup v2 at %s has no %s controller: no %s limit\n",
                     layout.root.c_str(), controller, controller);
      } else if (std::string_view(controller) != "cpu") {
        throw sys_error(layout.root + "/cgroup.controllers: no " + controller + " controller", ENOENT);
      }
    }
    for (const std::string& dir : {layout.root, parent_dir}) {
      const auto enabled = words(read_file(dir + "/cgroup.subtree_control"));
      for (const std::string controller : {"memory", "pids", "cpu"}) {
        if (!usable.contains(controller) || enabled.contains(controller)) continue;
        try {
          write_file(dir + "/cgroup.subtree_control", "+" + controller);
        } catch (const sys_error& e) {
          if (controller != "cpu" && !layout.partial) throw;
          std::fprintf(stderr, "sandgate-sandbox: no %s limit: %s\n", controller.c_str(), e.what());
          usable.erase(controller);
        }
      }
    }
    const std::string dir = parent_dir + "/" + id;
    if (::mkdir(dir.c_str(), 0755) == -1) throw sys_error("mkdir(" + dir + ")", errno);
    group.dirs_.push_back(dir);
    if (usable.contains("memory")) {
      write_file(dir + "/memory.max", std::to_string(l.memory_bytes));
      if (exists(dir + "/memory.swap.max")) write_file(dir + "/memory.swap.max", "0");
    }
    if (usable.contains("pids")) write_file(dir + "/pids.max", std::to_string(l.pids));
    if (usable.contains("cpu")) write_file(dir + "/cpu.max", std::to_string(quota_us) + " 100000");
  } else if (layout.version == cgroup_version::v1) {
    // memory and pids are required, cpu is used when the host mounts it.
    for (const char* controller : v1_controllers) {
      if (std::string_view(controller) == "cpu" && !exists(layout.root + "/cpu/cgroup.procs")) continue;
      const std::string parent_dir = layout.root + "/" + controller + "/" + parent;
      make_dir(parent_dir);
      const std::string dir = parent_dir + "/" + id;
      if (::mkdir(dir.c_str(), 0755) == -1) throw sys_error("mkdir(" + dir + ")", errno);
      group.dirs_.push_back(dir);
    }
    const std::string& memory = group.dirs_[0];
    write_file(memory + "/memory.limit_in_bytes", std::to_string(l.memory_bytes));
    if (exists(memory + "/memory.memsw.limit_in_bytes")) {
      write_file(memory + "/memory.memsw.limit_in_bytes", std::to_string(l.memory_bytes));
    }
    write_file(group.dirs_[1] + "/pids.max", std::to_string(l.pids));
    if (group.dirs_.size() > 2) {
      write_file(group.dirs_[2] + "/cpu.cfs_period_us", "100000");
      write_file(group.dirs_[2] + "/cpu.cfs_quota_us", std::to_string(quota_us));
    }
  }
  return group;
}

cgroup::cgroup(cgroup&& other) noexcept : version_(other.version_), dirs_(std::exchange(other.dirs_, {})) {}

cgroup& cgroup::operator=(cgroup&& other) noexcept {
  if (this != &other) {
    remove();
    version_ = other.version_;
    dirs_ = std::exchange(other.dirs_, {});
  }
  return *this;
}

cgroup::~cgroup() {
  remove();
}

void cgroup::add(pid_t pid) const {
  for (const auto& dir : dirs_)
    write_file(dir + "/cgroup.procs", std::to_string(pid));
}

unique_fd cgroup::open_oom_counter() const {
  if (dirs_.empty()) return {};
  const std::string path =
      dirs_[0] + (version_ == cgroup_version::v2 ? "/memory.events" : "/memory.oom_control");
  unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd && errno == ENOENT && version_ == cgroup_version::v2) return {};  // no memory controller (partial)
  if (!fd) throw sys_error("open(" + path + ", O_RDONLY)", errno);
  return fd;
}

void cgroup::kill_all() const {
  if (dirs_.empty()) return;
  if (version_ == cgroup_version::v2 && exists(dirs_[0] + "/cgroup.kill")) {
    try {
      write_file(dirs_[0] + "/cgroup.kill", "1");
    } catch (const sys_error&) {
    }
  }
  for (int round = 0; round < 200; ++round) {
    bool any = false;
    std::vector<std::string> pending(dirs_.begin(), dirs_.end());
    while (!pending.empty()) {
      const std::string dir = std::move(pending.back());
      pending.pop_back();
      for (pid_t pid : read_procs(dir)) {
        any = true;
        ::kill(pid, SIGKILL);
      }
      if (dir.size() < 4096) {
        for (auto& child : child_dirs(dir))
          pending.push_back(std::move(child));
      }
    }
    if (!any) return;
    sleep_ms(10);
  }
}

std::string cgroup::tracking_dir() const {
  if (dirs_.empty()) return {};
  return version_ == cgroup_version::v1 ? dirs_[1] : dirs_[0];
}

void cgroup::delegate_tracking(std::uint32_t uid, std::uint32_t gid) const {
  const std::string dir = tracking_dir();
  if (dir.empty()) return;
  const std::string owner = ", " + std::to_string(uid) + ", " + std::to_string(gid) + ")";
  for (const std::string& path : {dir, dir + "/cgroup.procs"}) {
    check_sys(::chown(path.c_str(), uid, gid), "chown(" + path + owner);
  }
}

void cgroup::remove() {
  if (dirs_.empty()) return;
  kill_all();
  for (const auto& dir : dirs_) {
    for (int round = 0; round < 100 && !remove_dir_tree(dir) && errno == EBUSY; ++round)
      sleep_ms(10);
  }
  dirs_.clear();
}

void sweep_stale_cgroups(const cgroup_layout& layout, const std::string& parent, long min_age_s) {
  std::vector<std::string> parents;
  if (layout.version == cgroup_version::v2) parents.push_back(layout.root + "/" + parent);
  if (layout.version == cgroup_version::v1) {
    for (const char* controller : v1_controllers)
      parents.push_back(layout.root + "/" + controller + "/" + parent);
  }
  const time_t now = ::time(nullptr);
  for (const auto& dir : parents) {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) continue;
    while (const dirent* entry = ::readdir(d)) {
      if (entry->d_type != DT_DIR || entry->d_name[0] == '.') continue;
      const std::string child = dir + "/" + entry->d_name;
      struct stat st {};
      // A live sandbox's supervisor sits in the sandbox cgroup itself, so only
      // a dead sandbox's tree (its per-child cgroups included) is removed.
      if (::stat(child.c_str(), &st) == 0 && now - st.st_mtime >= min_age_s && read_procs(child).empty()) {
        remove_dir_tree(child);
      }
    }
    ::closedir(d);
  }
}

}  // namespace sandgate::sandboxing
