#include "host_resources.hpp"

#include <fcntl.h>
#include <ftw.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "sandboxing/sys_error.hpp"

namespace sandgate::sandboxing::detail {

unique_fd open_path(const std::string& path) {
  unique_fd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!fd) throw sys_error("open(" + path + ", O_PATH)", errno);
  return fd;
}

unique_fd prepare_owned_dir(const std::string& dir, std::uint32_t uid, std::uint32_t gid, bool create,
                            bool& created) {
  created = false;
  if (create && ::mkdir(dir.c_str(), 0700) == 0) created = true;
  unique_fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) throw sys_error("open(" + dir + ", O_DIRECTORY|O_NOFOLLOW)", errno);
  struct stat st {};
  check_sys(::fstat(fd.get(), &st), "fstat(" + dir + ")");
  if (st.st_uid != uid || st.st_gid != gid) {
    check_sys(::fchown(fd.get(), uid, gid),
              "fchown(" + dir + ", " + std::to_string(uid) + ", " + std::to_string(gid) + ")");
  }
  if ((st.st_mode & 07777) != 0700) check_sys(::fchmod(fd.get(), 0700), "fchmod(" + dir + ", 0700)");
  return fd;
}

namespace {
std::uint32_t tree_uid = 0;
std::uint32_t tree_gid = 0;
int chown_entry(const char* path, const struct stat*, int, FTW*) {
  ::lchown(path, tree_uid, tree_gid);
  return 0;
}
}  // namespace

void chown_tree(const std::string& dir, std::uint32_t uid, std::uint32_t gid) {
  tree_uid = uid;
  tree_gid = gid;
  ::nftw(dir.c_str(), chown_entry, 64, FTW_PHYS | FTW_MOUNT);
}

std::string fd_path(int fd) {
  return "/proc/self/fd/" + std::to_string(fd);
}

unique_fd listen_control_socket(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof address.sun_path) {
    throw sys_error("bind(" + path + "): control socket path too long", ENAMETOOLONG);
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  unique_fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) throw sys_error("socket(AF_UNIX, SOCK_STREAM)", errno);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) ::unlink(path.c_str());
  const mode_t old_mask = ::umask(0177);
  const int rc = ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address);
  const int bind_errno = errno;
  ::umask(old_mask);
  if (rc == -1) throw sys_error("bind(" + path + ")", bind_errno);
  check_sys(::chmod(path.c_str(), 0600), "chmod(" + path + ", 0600)");
  check_sys(::listen(fd.get(), 8), "listen(" + path + ")");
  return fd;
}

void remove_tree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

}  // namespace sandgate::sandboxing::detail
