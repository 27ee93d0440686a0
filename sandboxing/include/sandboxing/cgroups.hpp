// One cgroup per sandbox with its limits, under a common parent:
// v2: <root>/<parent>/<id>; v1: <root>/{memory,pids,cpu}/<parent>/<id>.
// The version is detected at run time from what the host has mounted.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sandboxing/policy.hpp"
#include "sandboxing/unique_fd.hpp"

namespace sandgate::sandboxing {

enum class cgroup_version { none, v1, v2 };

struct cgroup_layout {
  cgroup_version version = cgroup_version::none;
  std::string root = "/sys/fs/cgroup";
  // v2 without the memory or pids controller (bound to v1 hierarchies, or
  // not delegated): the cgroup tracks and kills processes but cannot limit
  // them. Used only when running without limits is allowed.
  bool partial = false;
};

// v2 when <root>/cgroup.controllers lists memory and pids, else v1 when
// <root>/memory and <root>/pids are v1 hierarchies, else a partial v2 when
// <root> is a cgroup v2 hierarchy at all, else none.
cgroup_layout detect_cgroups(const std::string& root = "/sys/fs/cgroup");
std::string_view to_string(cgroup_version version);

// The oom_kill count in the text of memory.events (v2) or memory.oom_control (v1).
std::uint64_t parse_oom_kill_count(std::string_view text);
// The same, read afresh from an open counter file.
std::uint64_t read_oom_kill_count(int fd);

class cgroup {
 public:
  // Creates the sandbox's cgroup and writes the limits; throws sys_error
  // naming the file. The parent is created (and its controllers enabled on
  // v2). A partial v2 layout gets the limits its controllers allow, each
  // missing one named in a warning on stderr.
  static cgroup create(const cgroup_layout& layout, const std::string& parent, const std::string& id,
                       const limits& l);
  cgroup() = default;
  cgroup(cgroup&& other) noexcept;
  cgroup& operator=(cgroup&& other) noexcept;
  ~cgroup();

  // Moves a process (and its future children) into the cgroup.
  void add(pid_t pid) const;
  // A descriptor of memory.events (v2) / memory.oom_control (v1) for read_oom_kill_count.
  unique_fd open_oom_counter() const;
  // SIGKILLs every process in the cgroup and the cgroups below it until none
  // is left (bounded wait).
  void kill_all() const;
  // Kills what is left and removes the directories (and any cgroups the
  // supervisor made below them); safe to call twice.
  void remove();
  const std::vector<std::string>& dirs() const noexcept { return dirs_; }
  cgroup_version version() const noexcept { return version_; }
  // Where the supervisor makes one cgroup per child: the cgroup itself (v2),
  // its pids cgroup (v1); empty without a cgroup.
  std::string tracking_dir() const;
  // Lets uid:gid (the supervisor) create and remove cgroups in tracking_dir()
  // and move its own children into them: the directory and its cgroup.procs
  // change owner, as cgroup v2's delegation model describes (the limit files
  // stay root's). Throws sys_error.
  void delegate_tracking(std::uint32_t uid, std::uint32_t gid) const;

 private:
  cgroup_version version_ = cgroup_version::none;
  std::vector<std::string> dirs_;  // v2: one; v1: memory, pids, cpu
};

// Removes empty cgroups under the parent left by sandboxes that ended without
// cleaning up (older than min_age_s, so a sandbox being set up is never hit).
void sweep_stale_cgroups(const cgroup_layout& layout, const std::string& parent, long min_age_s);

}  // namespace sandgate::sandboxing
