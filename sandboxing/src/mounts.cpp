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
  for (std::size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      const std::string part = path.substr(0, i);
      if (::mkdir(part.c_str(), mode) == -1 && errno != EEXIST) throw sys_error("mkdir(" + part + ")", errno);
    }
  }
}

void make_file(const std::string& path, mode_t mode) {
  const auto slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) make_dirs(path.substr(0, slash));
  unique_fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, mode));
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
  unsigned long flags = MS_REMOUNT | MS_BIND | MS_NOSUID | locked_flags(target);
  if (read_only) flags |= MS_RDONLY;
  do_mount(nullptr, target, nullptr, flags, "", source);
}

void bind_device(const std::string& source, const std::string& target) {
  make_file(target);
  do_mount(source.c_str(), target, nullptr, MS_BIND, "", source);
  do_mount(nullptr, target, nullptr, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NOEXEC | locked_flags(target), "",
           source);
}

void mount_tmpfs(const std::string& target, const std::string& options, unsigned long extra_flags) {
  make_dirs(target);
  do_mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV | extra_flags, options, "tmpfs");
}

void remount_read_only(const std::string& target) {
  do_mount(nullptr, target, nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | locked_flags(target), "", target);
}

void pivot_into(const std::string& new_root) {
  check_sys(::chdir(new_root.c_str()), "chdir(" + new_root + ")");
  check_sys(::syscall(SYS_pivot_root, ".", "."), "pivot_root(" + new_root + ", " + new_root + ")");
  check_sys(::umount2(".", MNT_DETACH), "umount2(old root, MNT_DETACH)");
  check_sys(::chdir("/"), "chdir(/)");
}

}  // namespace sandgate::sandboxing
