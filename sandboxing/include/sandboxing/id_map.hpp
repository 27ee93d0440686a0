// Which host ids a sandbox runs as, and the user namespace maps that say so.
// Run as root: inside root (the supervisor) maps to host_base + 2k and the
// sandbox user to host_base + 2k + 1, k derived from the sandbox id (or given);
// host root is never mapped. Run unprivileged: the sandbox user maps to the
// caller's own uid/gid and the supervisor runs as that user too.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace sandgate::sandboxing {

struct id_plan {
  bool privileged = false;          // maps written with CAP_SETUID (two ids each)
  std::uint32_t inside_uid = 1000;  // the sandbox user inside
  std::uint32_t inside_gid = 1000;
  std::uint32_t host_uid = 0;  // the sandbox user on the host (owner of the run dir, ipc sockets)
  std::uint32_t host_gid = 0;
  std::uint32_t supervisor_host_uid = 0;  // the supervisor (inside root) on the host; privileged only
  std::uint32_t supervisor_host_gid = 0;
  std::uint32_t supervisor_uid() const noexcept { return privileged ? 0 : inside_uid; }
  std::uint32_t supervisor_gid() const noexcept { return privileged ? 0 : inside_gid; }
};

inline constexpr std::uint32_t default_host_id_base = 200000;
inline constexpr std::uint32_t default_host_id_slots = 30000;

// The slot for a sandbox id: a stable hash into [0, slots).
std::uint32_t host_id_slot(std::string_view sandbox_id, std::uint32_t slots);

// The plan for this caller: privileged when the effective uid is 0.
id_plan plan_ids(std::uint32_t inside_uid, std::uint32_t inside_gid, std::uint32_t host_base,
                 std::uint32_t slot);

// The text for /proc/<pid>/uid_map and gid_map.
std::string uid_map_text(const id_plan& plan);
std::string gid_map_text(const id_plan& plan);

// Writes setgroups (deny when unprivileged), uid_map and gid_map of a child
// that has just entered its user namespace; throws sys_error.
void write_id_maps(pid_t pid, const id_plan& plan);

}  // namespace sandgate::sandboxing
