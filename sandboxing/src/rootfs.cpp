#include "sandboxing/rootfs.hpp"

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "sandboxing/mounts.hpp"
#include "sandboxing/sys_error.hpp"

namespace sandgate::sandboxing {
namespace {

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

// A host path that is a symlink is copied as the same symlink; otherwise bound read-only.
void mirror_read_only(const std::string& host_path, const std::string& root) {
  struct stat st {};
  if (!host_lstat(host_path, st)) return;
  if (S_ISLNK(st.st_mode)) {
    make_symlink(read_link(host_path), root + host_path);
  } else {
    bind_path(host_path, root + host_path, true);
  }
}

void system_dirs(const std::string& root) {
  for (const char* dir : {"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"})
    mirror_read_only(dir, root);
}

void etc(const rootfs_plan& plan, const std::string& root) {
  make_dirs(root + "/etc");
  for (const auto& [name, content] : generated_etc_files(plan.uid, plan.gid, plan.hostname)) {
    write_new_file(root + "/etc/" + name, content);
  }
  for (const auto& name : bound_etc_entries())
    mirror_read_only("/etc/" + name, root);
}

void dev(const std::string& root) {
  const std::string dev = root + "/dev";
  mount_tmpfs(dev, "mode=0755,size=1m", MS_NOEXEC);
  for (const char* node : {"null", "zero", "full", "random", "urandom", "tty"}) {
    bind_device(std::string("/dev/") + node, dev + "/" + node);
  }
  make_symlink("/proc/self/fd", dev + "/fd");
  make_symlink("/proc/self/fd/0", dev + "/stdin");
  make_symlink("/proc/self/fd/1", dev + "/stdout");
  make_symlink("/proc/self/fd/2", dev + "/stderr");
  mount_tmpfs(dev + "/shm", "mode=1777,size=64m", MS_NOEXEC);
  make_dirs(dev + "/pts");
  if (::mount("devpts", (dev + "/pts").c_str(), "devpts", MS_NOSUID | MS_NOEXEC,
              "newinstance,ptmxmode=0666,mode=0620") == 0) {
    make_symlink("pts/ptmx", dev + "/ptmx");
  }
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
  etc(plan, root);
  dev(root);
  proc(root);
  writable(plan, root);
  for (const auto& m : plan.extra)
    bind_path(m.source, root + m.target, m.read_only);
  pivot_into(root);
  remount_read_only("/");
  remount_read_only("/dev");
}

}  // namespace sandgate::sandboxing
