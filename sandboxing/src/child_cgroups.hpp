// One cgroup per spawned child, below the sandbox's own, so that the child
// and every descendant can be killed together: a process cannot leave its
// cgroup by double-forking, setsid or setpgid (moving needs write access to
// cgroup.procs files that belong to the supervisor). v2: <sandbox>/c<N>; v1:
// in the pids hierarchy, <pids>/<parent>/<id>/c<N>. No controllers are
// enabled for these: the sandbox's limits above them apply to the whole tree.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "sandboxing/cgroups.hpp"
#include "sandboxing/unique_fd.hpp"

namespace sandgate::sandboxing::detail {

class child_cgroups {
 public:
  // Without a directory: no tracking (no cgroup, e.g. --allow-no-cgroup).
  child_cgroups() = default;
  // dir: an O_DIRECTORY descriptor of the sandbox's cgroup (v2) or its pids
  // cgroup (v1), writable by the supervisor.
  child_cgroups(unique_fd dir, cgroup_version version) : dir_(std::move(dir)), version_(version) {}

  bool enabled() const noexcept { return static_cast<bool>(dir_); }

  struct leaf {
    std::string name;  // "c<N>"
    unique_fd procs;   // its cgroup.procs, O_WRONLY: the child writes "0" to move itself
    unique_fd dir;     // v2: the directory, to clone the child straight into it
  };
  // Creates cgroup c<serial>; throws sys_error naming the call.
  leaf create(std::uint64_t serial) const;
  // SIGKILLs every process in the cgroup, including ones forked meanwhile
  // (cgroup.kill on v2; on v1 rounds of reading cgroup.procs until a round
  // finds no process it has not already killed).
  void kill(const std::string& name) const;
  // Removes the cgroup; false while processes are still in it.
  bool remove(const std::string& name) const;

 private:
  unique_fd dir_;
  cgroup_version version_ = cgroup_version::none;
};

}  // namespace sandgate::sandboxing::detail
