// The sandbox's root filesystem, built on a fresh tmpfs and then made the
// root with pivot_root:
//   /usr /bin /sbin /lib /lib64 ... read-only binds of the host's (or the
//     same symlinks where the host has them, as Debian's merged /usr does)
//   /etc            a small read-only tmpfs: generated passwd, group, hosts,
//                   hostname, nsswitch.conf
//                   plus what programs need from the host's (ld.so.cache,
//                   ssl, fonts, alternatives, matplotlibrc, localtime, ...):
//                   copies of regular files up to 16 KiB, binds of the rest
//   /proc           a fresh proc of the sandbox's pid namespace
//   /dev            tmpfs with null zero full random urandom tty bound from
//                   the host, fd/std* links, /dev/shm tmpfs, /dev/pts
//   /tmp            tmpfs of tmp_bytes
//   /workspace      the host's --workspace dir (bound read-write) or a tmpfs
//                   of workspace_bytes
//   /run/sandgate   the host's --run-dir (bound read-write) or a tmpfs
// Everything else is read-only, nosuid, nodev.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sandboxing/policy.hpp"

namespace sandgate::sandboxing {

struct rootfs_plan {
  std::string build_dir = "/tmp";  // where the new root is assembled, in the private mount namespace
  std::string workspace_source;    // host path (e.g. /proc/self/fd/N); empty: tmpfs
  std::string run_source;          // host path (e.g. /proc/self/fd/N); empty: tmpfs
  std::vector<bind_mount> extra;   // policy mounts, sources resolved like the above
  std::uint64_t workspace_bytes = 1ull << 30;
  std::uint64_t tmp_bytes = 256ull << 20;
  std::uint32_t uid = 1000;  // the sandbox user inside
  std::uint32_t gid = 1000;
  std::string hostname = "sandbox";
};

// Builds the tree and pivots into it; the caller must be in a private mount
// namespace and in the sandbox's pid namespace (for /proc). Throws sys_error.
void build_rootfs(const rootfs_plan& plan);

// The generated /etc files, by name (passwd, group, hosts, hostname, nsswitch.conf).
std::vector<std::pair<std::string, std::string>> generated_etc_files(std::uint32_t uid, std::uint32_t gid,
                                                                     const std::string& hostname);

// The host /etc entries bound read-only into the sandbox when present.
const std::vector<std::string>& bound_etc_entries();

}  // namespace sandgate::sandboxing
