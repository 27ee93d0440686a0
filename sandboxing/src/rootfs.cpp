#include "sandboxing/rootfs.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "sandboxing/mounts.hpp"
#include "sandboxing/sys_error.hpp"
#include "sandboxing/unique_fd.hpp"
#include "timing.hpp"

namespace sandgate::sandboxing {
namespace {

constexpr ssize_t copied_etc_file_bytes = ssize_t{16} * 1024;  // host /etc files up to this size are copied

bool host_lstat(const std::string& path, struct stat& st) {
  return ::lstat(path.c_str(), &st) == 0;
}

std::string read_link(const std::string& path) {
  char target[4096];
  const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
  if (n < 0) throw sys_error("readlink(" + path + ")", errno);
  return std::string(target, static_cast<std::size_t>(n));
}

void make_symlink(const std::string& target, const std::string& link) {
  if (::symlink(target.c_str(), link.c_str()) == -1)
    throw sys_error("symlink(" + target + ", " + link + ")", errno);
}

// A host path that is a symlink is copied as the same symlink; otherwise
// bound (read-only, or left for the caller to restrict with its tree).
// Returns the mount made, if any.
std::string mirror(const std::string& host_path, const std::string& root, bool restrict_now) {
  struct stat st {};
  if (!host_lstat(host_path, st)) return {};
  if (S_ISLNK(st.st_mode)) {
    make_symlink(read_link(host_path), root + host_path);
    return {};
  }
  if (restrict_now) {
    bind_path(host_path, root + host_path, true);
  } else {
    bind_only(host_path, root + host_path);
  }
  return root + host_path;
}

void system_dirs(const std::string& root) {
  for (const char* dir : {"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"})
    mirror(dir, root, true);
}

// A small regular host file is copied: cheaper than a mount (a few tens of
// microseconds each), and the same to the sandbox (a bind pins the inode it
// found, too). False when the file is not small and regular.
bool copy_small_file(const std::string& host_path, const std::string& target) {
  unique_fd in(::open(host_path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!in || ::fstat(in.get(), &st) == -1 || !S_ISREG(st.st_mode) || st.st_size > copied_etc_file_bytes) {
    return false;
  }
  char content[copied_etc_file_bytes + 1];
  const ssize_t n = ::read(in.get(), content, sizeof content);
  if (n < 0 || n > copied_etc_file_bytes) return false;
  write_new_file(target, std::string(content, static_cast<std::size_t>(n)), st.st_mode & 0755);
  return true;
}

// /etc is a small tmpfs of its own, so that it and the host entries bound
// into it become read-only with one mount_setattr instead of a remount each.
void etc(const rootfs_plan& plan, const std::string& root) {
  mount_tmpfs(root + "/etc", "mode=0755,size=1m");
  for (const auto& [name, content] : generated_etc_files(plan.uid, plan.gid, plan.hostname)) {
    write_new_file(root + "/etc/" + name, content);
  }
  std::vector<std::string> bound;
  for (const auto& name : bound_etc_entries()) {
    const std::string host_path = "/etc/" + name;
    if (copy_small_file(host_path, root + host_path)) continue;
    if (auto mount = mirror(host_path, root, false); !mount.empty()) bound.push_back(std::move(mount));
  }
  restrict_mount_tree(root + "/etc", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, bound);
}

// /dev: a tmpfs with the device nodes bound in, made read-only, nosuid and
// noexec as one tree (writing to a device node needs no writable mount);
// then the writable /dev/shm and /dev/pts on top.
void dev(const std::string& root) {
  const std::string dev = root + "/dev";
  mount_tmpfs(dev, "mode=0755,size=1m", MS_NOEXEC);
  std::vector<std::string> devices;
  for (const char* node : {"null", "zero", "full", "random", "urandom", "tty"}) {
    devices.push_back(dev + "/" + node);
    bind_only(std::string("/dev/") + node, devices.back());
  }
  make_symlink("/proc/self/fd", dev + "/fd");
  make_symlink("/proc/self/fd/0", dev + "/stdin");
  make_symlink("/proc/self/fd/1", dev + "/stdout");
  make_symlink("/proc/self/fd/2", dev + "/stderr");
  make_symlink("pts/ptmx", dev + "/ptmx");
  make_dirs(dev + "/shm");
  make_dirs(dev + "/pts");
  restrict_mount_tree(dev, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, devices);
  mount_tmpfs(dev + "/shm", "mode=1777,size=64m", MS_NOEXEC);
  // Without devpts (an old or restricted kernel) /dev/ptmx is a dangling link: no ptys.
  (void)::mount("devpts", (dev + "/pts").c_str(), "devpts", MS_NOSUID | MS_NOEXEC,
                "newinstance,ptmxmode=0666,mode=0620");
}

void proc(const std::string& root) {
  const std::string target = root + "/proc";
  make_dirs(target);
  if (::mount("proc", target.c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == -1) {
    throw sys_error("mount(proc -> " + target + ", proc, MS_NOSUID|MS_NODEV|MS_NOEXEC)", errno);
  }
}

void writable(const rootfs_plan& plan, const std::string& root) {
  const std::string owner = ",uid=" + std::to_string(plan.uid) + ",gid=" + std::to_string(plan.gid);
  mount_tmpfs(root + "/tmp", "mode=1777,size=" + std::to_string(plan.tmp_bytes));
  make_dirs(root + "/var");
  make_symlink("/tmp", root + "/var/tmp");
  if (plan.workspace_source.empty()) {
    mount_tmpfs(root + "/workspace", "mode=0755,size=" + std::to_string(plan.workspace_bytes) + owner);
  } else {
    bind_path(plan.workspace_source, root + "/workspace", false);
  }
  if (plan.run_source.empty()) {
    mount_tmpfs(root + "/run/sandgate", "mode=0700,size=16m" + owner);
  } else {
    bind_path(plan.run_source, root + "/run/sandgate", false);
  }
}

}  // namespace

void build_rootfs(const rootfs_plan& plan) {
  const std::string& root = plan.build_dir;
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == -1) {
    throw sys_error("mount(/, MS_REC|MS_PRIVATE)", errno);
  }
  mount_tmpfs(root, "mode=0755,size=16m");
  system_dirs(root);
  detail::timing_mark("rootfs: system dirs");
  etc(plan, root);
  detail::timing_mark("rootfs: /etc");
  dev(root);
  proc(root);
  detail::timing_mark("rootfs: /dev, /proc");
  writable(plan, root);
  for (const auto& m : plan.extra)
    bind_path(m.source, root + m.target, m.read_only);
  detail::timing_mark("rootfs: writable and policy mounts");
  pivot_into(root);
  remount_read_only("/");
}

}  // namespace sandgate::sandboxing
