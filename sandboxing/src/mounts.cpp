#include "sandboxing/mounts.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "sandboxing/sys_error.hpp"
#include "sandboxing/unique_fd.hpp"

namespace sandgate::sandboxing {
namespace {

void do_mount(const char* source, const std::string& target, const char* type, unsigned long flags,
              const std::string& data, const std::string& shown_source) {
  if (::mount(source, target.c_str(), type, flags, data.empty() ? nullptr : data.c_str()) == -1) {
    std::string call = "mount(" + shown_source + " -> " + target;
    if (type != nullptr) call += std::string(", ") + type;
    call += ", " + mount_flag_names(flags);
    if (!data.empty()) call += ", " + data;
    throw sys_error(call + ")", errno);
  }
}

// The mount flags the kernel locks on a mount seen from a user namespace.
unsigned long locked_flags(const std::string& path) {
  struct statvfs st {};
  if (::statvfs(path.c_str(), &st) == -1) throw sys_error("statvfs(" + path + ")", errno);
  unsigned long flags = 0;
  const std::pair<unsigned long, unsigned long> table[] = {
      {ST_NOSUID, MS_NOSUID},   {ST_NODEV, MS_NODEV},           {ST_NOEXEC, MS_NOEXEC},
      {ST_NOATIME, MS_NOATIME}, {ST_NODIRATIME, MS_NODIRATIME}, {ST_RELATIME, MS_RELATIME}};
  for (const auto& [st_flag, ms_flag] : table) {
    if (st.f_flag & st_flag) flags |= ms_flag;
  }
  return flags;
}

// The MS_* flags of MOUNT_ATTR_* ones, for remounting where mount_setattr is missing.
unsigned long remount_flags(std::uint64_t attr) {
  unsigned long flags = 0;
  if (attr & MOUNT_ATTR_RDONLY) flags |= MS_RDONLY;
  if (attr & MOUNT_ATTR_NOSUID) flags |= MS_NOSUID;
  if (attr & MOUNT_ATTR_NODEV) flags |= MS_NODEV;
  if (attr & MOUNT_ATTR_NOEXEC) flags |= MS_NOEXEC;
  return flags;
}

std::string attr_names(std::uint64_t attr) {
  std::string text;
  const std::pair<std::uint64_t, const char*> names[] = {{MOUNT_ATTR_RDONLY, "MOUNT_ATTR_RDONLY"},
                                                         {MOUNT_ATTR_NOSUID, "MOUNT_ATTR_NOSUID"},
                                                         {MOUNT_ATTR_NODEV, "MOUNT_ATTR_NODEV"},
                                                         {MOUNT_ATTR_NOEXEC, "MOUNT_ATTR_NOEXEC"}};
  for (const auto& [flag, name] : names) {
    if (attr & flag) text += (text.empty() ? "" : "|") + std::string(name);
  }
  return text.empty() ? "0" : text;
}

// The old way: one remount per mount, keeping the flags the kernel locks.
void remount_with(const std::string& target, unsigned long flags) {
  do_mount(nullptr, target, nullptr, MS_REMOUNT | MS_BIND | flags | locked_flags(target), "", target);
}

}  // namespace

std::string mount_flag_names(unsigned long flags) {
  const std::pair<unsigned long, const char*> names[] = {
      {MS_RDONLY, "MS_RDONLY"},    {MS_NOSUID, "MS_NOSUID"},
      {MS_NODEV, "MS_NODEV"},      {MS_NOEXEC, "MS_NOEXEC"},
      {MS_REMOUNT, "MS_REMOUNT"},  {MS_BIND, "MS_BIND"},
      {MS_REC, "MS_REC"},          {MS_PRIVATE, "MS_PRIVATE"},
      {MS_NOATIME, "MS_NOATIME"},  {MS_NODIRATIME, "MS_NODIRATIME"},
      {MS_RELATIME, "MS_RELATIME"}};
  std::string text;
  for (const auto& [flag, name] : names) {
    if (flags & flag) text += (text.empty() ? "" : "|") + std::string(name);
  }
  return text.empty() ? "0" : text;
}

void make_dirs(const std::string& path, mode_t mode) {
  // The common case (the parent exists) is one mkdir; parents only on ENOENT.
  if (::mkdir(path.c_str(), mode) == 0 || errno == EEXIST) return;
  const auto slash = path.rfind('/');
  if (errno != ENOENT || slash == std::string::npos || slash == 0)
    throw sys_error("mkdir(" + path + ")", errno);
  make_dirs(path.substr(0, slash), mode);
  if (::mkdir(path.c_str(), mode) == -1 && errno != EEXIST) throw sys_error("mkdir(" + path + ")", errno);
}

void make_file(const std::string& path, mode_t mode) {
  unique_fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, mode));
  const auto slash = path.rfind('/');
  if (!fd && errno == ENOENT && slash != std::string::npos && slash > 0) {
    make_dirs(path.substr(0, slash));
    fd.reset(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, mode));
  }
  if (!fd) throw sys_error("open(" + path + ", O_CREAT)", errno);
}

void write_new_file(const std::string& path, const std::string& content, mode_t mode) {
  unique_fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (!fd) throw sys_error("open(" + path + ", O_CREAT)", errno);
  if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
    throw sys_error("write(" + path + ")", errno);
  }
  check_sys(::fchmod(fd.get(), mode), "fchmod(" + path + ")");
}

void bind_path(const std::string& source, const std::string& target, bool read_only) {
  struct stat st {};
  if (::stat(source.c_str(), &st) == -1) throw sys_error("stat(" + source + ")", errno);
  if (S_ISDIR(st.st_mode)) {
    make_dirs(target);
  } else {
    make_file(target);
  }
  do_mount(source.c_str(), target, nullptr, MS_BIND | MS_REC, "", source);
  restrict_mount_tree(target, MOUNT_ATTR_NOSUID | (read_only ? MOUNT_ATTR_RDONLY : 0));
}

void bind_only(const std::string& source, const std::string& target) {
  struct stat st {};
  if (::stat(source.c_str(), &st) == -1) throw sys_error("stat(" + source + ")", errno);
  if (S_ISDIR(st.st_mode)) {
    make_dirs(target);
  } else {
    make_file(target);
  }
  do_mount(source.c_str(), target, nullptr, MS_BIND | MS_REC, "", source);
}

void restrict_mount_tree(const std::string& target, std::uint64_t attr_set,
                         const std::vector<std::string>& below) {
  mount_attr attr{};
  attr.attr_set = attr_set;
  if (::mount_setattr(AT_FDCWD, target.c_str(), AT_RECURSIVE | AT_SYMLINK_NOFOLLOW, &attr, sizeof attr) ==
      0) {
    return;
  }
  if (errno != ENOSYS) {
    throw sys_error("mount_setattr(" + target + ", AT_RECURSIVE, " + attr_names(attr_set) + ")", errno);
  }
  remount_with(target, remount_flags(attr_set));
  for (const auto& mount : below)
    remount_with(mount, remount_flags(attr_set));
}

void mount_tmpfs(const std::string& target, const std::string& options, unsigned long extra_flags) {
  make_dirs(target);
  do_mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV | extra_flags, options, "tmpfs");
}

void remount_read_only(const std::string& target) {
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_RDONLY;
  if (::mount_setattr(AT_FDCWD, target.c_str(), AT_SYMLINK_NOFOLLOW, &attr, sizeof attr) == 0) return;
  if (errno != ENOSYS) throw sys_error("mount_setattr(" + target + ", MOUNT_ATTR_RDONLY)", errno);
  remount_with(target, MS_RDONLY);
}

void pivot_into(const std::string& new_root) {
  check_sys(::chdir(new_root.c_str()), "chdir(" + new_root + ")");
  check_sys(::syscall(SYS_pivot_root, ".", "."), "pivot_root(" + new_root + ", " + new_root + ")");
  check_sys(::umount2(".", MNT_DETACH), "umount2(old root, MNT_DETACH)");
  check_sys(::chdir("/"), "chdir(/)");
}

}  // namespace sandgate::sandboxing
