#include "workspace_files.hpp"

#include <jupyter_protocol/message.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace sandgate::gateway {

namespace {

constexpr std::size_t max_path_bytes = 4096;
constexpr std::size_t max_name_bytes = 255;
constexpr int max_depth = 64;

int openat2_beneath(int dir, const char* path, int flags) {
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
  how.mode = 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  for (;;) {
    const int fd = static_cast<int>(::syscall(SYS_openat2, dir, path, &how, sizeof how));
    if (fd >= 0 || errno != EAGAIN) return fd;  // EAGAIN: a concurrent rename; try again
  }
}

std::pair<std::string, std::string> split_parent(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return {"", path};
  return {path.substr(0, slash), path.substr(slash + 1)};
}

std::string type_of(mode_t mode) {
  if (S_ISREG(mode)) return "file";
  if (S_ISDIR(mode)) return "directory";
  if (S_ISLNK(mode)) return "symlink";
  return "other";
}

// Removes everything in `dir` (a descriptor of a directory), never
// following a link: a link is removed as a link.
bool empty_dir(int dir, int depth) {
  if (depth > max_depth) {
    errno = ELOOP;
    return false;
  }
  const int list_fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (list_fd < 0) return false;
  DIR* d = ::fdopendir(list_fd);
  if (!d) {
    ::close(list_fd);
    return false;
  }
  bool ok = true;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    if (::unlinkat(dir, e->d_name, 0) == 0) continue;
    if (errno != EISDIR && errno != EPERM) {
      if (errno != ENOENT) ok = false;
      continue;
    }
    unique_fd sub(::openat(dir, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub || !empty_dir(sub.get(), depth + 1) || ::unlinkat(dir, e->d_name, AT_REMOVEDIR) != 0) ok = false;
  }
  ::closedir(d);
  return ok;
}

// Filesystem access as the sandbox user for the life of the guard: files
// are created as theirs (a workspace in the sandbox's user namespace cannot
// even store the gateway's uid), and nothing is reached that they could not
// reach themselves. setfsuid acts on the calling thread only.
class as_user {
 public:
  as_user(uid_t uid, gid_t gid)
      : old_gid_(::setfsgid(static_cast<gid_t>(gid))), old_uid_(::setfsuid(static_cast<uid_t>(uid))) {}
  ~as_user() {
    ::setfsuid(static_cast<uid_t>(old_uid_));
    ::setfsgid(static_cast<gid_t>(old_gid_));
  }
  as_user(const as_user&) = delete;
  as_user& operator=(const as_user&) = delete;

 private:
  int old_gid_;
  int old_uid_;
};

}  // namespace

domain_error errno_file_error(int error, const std::string& what, const std::string& path) {
  const std::string shown = path.empty() ? "the workspace" : "\"" + path + "\"";
  switch (error) {
    case ENOENT:
      return {fault::not_found, "No such file or directory: " + shown};
    case EXDEV:
      return {fault::invalid, shown + " leads outside the workspace"};
    case ELOOP:
      return {fault::invalid, shown + " goes through too many links, or a link where none may be"};
    case ENOTDIR:
      return {fault::invalid, "A component of " + shown + " is not a directory"};
    case EISDIR:
      return {fault::conflict, shown + " is a directory"};
    case EEXIST:
    case ENOTEMPTY:
      return {fault::conflict, shown + " already exists"};
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return {fault::too_large, "The workspace is full: " + shown + " does not fit"};
    case ENAMETOOLONG:
      return {fault::invalid, "The path is too long: " + shown};
    case EACCES:
    case EPERM:
    case EROFS:
      return {fault::forbidden, "Not allowed to " + what + " " + shown};
    default:
      return {fault::internal,
              "Cannot " + what + " " + shown + ": " + std::generic_category().message(error)};
  }
}

std::optional<std::string> workspace_files::normalize(std::string_view path, domain_error& err) {
  if (path.size() > max_path_bytes) {
    err = {fault::invalid, "The path is too long"};
    return std::nullopt;
  }
  if (!path.empty() && path.front() == '/') {
    err = {fault::invalid, "Paths are relative to the workspace; \"" + std::string(path) + "\" is absolute"};
    return std::nullopt;
  }
  std::string out;
  std::size_t start = 0;
  while (start <= path.size()) {
    auto end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const auto part = path.substr(start, end - start);
    start = end + 1;
    if (part.empty() || part == ".") continue;
    if (part == ".." || part.find('\0') != std::string_view::npos || part.size() > max_name_bytes) {
      err = {fault::invalid,
             "The path \"" + std::string(path) + "\" has a \"..\", a NUL or a name that is too long"};
      return std::nullopt;
    }
    if (!out.empty()) out += '/';
    out += part;
  }
  return out;
}

unique_fd workspace_files::resolve(const std::string& path, int flags, domain_error& err) const {
  unique_fd fd(openat2_beneath(root_.get(), path.empty() ? "." : path.c_str(), flags));
  if (!fd) err = errno_file_error(errno, "open", path);
  return fd;
}

std::optional<struct stat> workspace_files::stat(const std::string& path, domain_error& err) const {
  const as_user user(uid_, gid_);
  const auto [parent, name] = split_parent(path);
  unique_fd dir = resolve(parent, O_PATH | O_DIRECTORY, err);
  if (!dir) return std::nullopt;
  struct stat st {};
  const int r =
      name.empty() ? ::fstat(dir.get(), &st) : ::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW);
  if (r != 0) {
    err = errno_file_error(errno, "stat", path);
    return std::nullopt;
  }
  return st;
}

unique_fd workspace_files::open_read(const std::string& path, struct stat& st, domain_error& err) const {
  const as_user user(uid_, gid_);
  // O_PATH first: opening a FIFO or a device for reading could block or act.
  unique_fd where = resolve(path, O_PATH, err);
  if (!where) return {};
  if (::fstat(where.get(), &st) != 0) {
    err = errno_file_error(errno, "stat", path);
    return {};
  }
  if (S_ISDIR(st.st_mode)) {
    err = {fault::conflict, "\"" + path + "\" is a directory"};
    return {};
  }
  if (!S_ISREG(st.st_mode)) {
    err = {fault::invalid, "\"" + path + "\" is not a regular file"};
    return {};
  }
  // Reopened through the descriptor just checked: the same file, whatever
  // happens to the path meanwhile.
  const std::string self = "/proc/self/fd/" + std::to_string(where.get());
  unique_fd fd(::open(self.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd) err = errno_file_error(errno, "read", path);
  return fd;
}

std::optional<std::vector<workspace_entry>> workspace_files::list(const std::string& path,
                                                                  domain_error& err) const {
  const as_user user(uid_, gid_);
  unique_fd dir = resolve(path, O_RDONLY | O_DIRECTORY, err);
  if (!dir) return std::nullopt;
  const int dup = ::fcntl(dir.get(), F_DUPFD_CLOEXEC, 0);
  DIR* d = dup < 0 ? nullptr : ::fdopendir(dup);
  if (!d) {
    if (dup >= 0) ::close(dup);
    err = errno_file_error(errno, "list", path);
    return std::nullopt;
  }
  std::vector<workspace_entry> out;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    if (std::strncmp(e->d_name, ".sandgate-upload-", 17) == 0) continue;
    struct stat st {};
    if (::fstatat(dir.get(), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    out.push_back({e->d_name, type_of(st.st_mode), static_cast<std::uint64_t>(st.st_size),
                   static_cast<std::int64_t>(st.st_mtim.tv_sec)});
  }
  ::closedir(d);
  return out;
}

bool workspace_files::remove(const std::string& path, domain_error& err) const {
  const as_user user(uid_, gid_);
  if (path.empty()) {
    err = {fault::invalid, "The workspace itself cannot be removed"};
    return false;
  }
  const auto [parent, name] = split_parent(path);
  unique_fd dir = resolve(parent, O_PATH | O_DIRECTORY, err);
  if (!dir) return false;
  if (::unlinkat(dir.get(), name.c_str(), 0) == 0) return true;
  if (errno != EISDIR && errno != EPERM) {
    err = errno_file_error(errno, "remove", path);
    return false;
  }
  unique_fd sub(::openat(dir.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!sub || !empty_dir(sub.get(), 0) || ::unlinkat(dir.get(), name.c_str(), AT_REMOVEDIR) != 0) {
    err = errno_file_error(errno, "remove", path);
    return false;
  }
  return true;
}

unique_fd workspace_files::make_parents(const std::string& dir, domain_error& err) const {
  // Each prefix is resolved from the workspace root, so a link planted
  // between two steps can only lead to another place beneath it.
  std::string prefix;
  std::size_t start = 0;
  while (start < dir.size()) {
    auto end = dir.find('/', start);
    if (end == std::string::npos) end = dir.size();
    const std::string part = dir.substr(start, end - start);
    start = end + 1;
    unique_fd parent = resolve(prefix, O_PATH | O_DIRECTORY, err);
    if (!parent) return {};
    if (::mkdirat(parent.get(), part.c_str(), 0755) != 0 && errno != EEXIST) {
      err = errno_file_error(errno, "create", prefix.empty() ? part : prefix + "/" + part);
      return {};
    }
    prefix = prefix.empty() ? part : prefix + "/" + part;
  }
  return resolve(dir, O_PATH | O_DIRECTORY, err);
}

std::optional<workspace_files::upload> workspace_files::begin_upload(const std::string& path,
                                                                     domain_error& err) const {
  const as_user user(uid_, gid_);
  if (path.empty()) {
    err = {fault::invalid, "A file path is required"};
    return std::nullopt;
  }
  const auto [parent, name] = split_parent(path);
  upload u;
  u.dir = make_parents(parent, err);
  if (!u.dir) return std::nullopt;
  u.name = name;
  u.path = path;
  u.temp_name = ".sandgate-upload-" + protocol::new_uuid4();
  u.file = unique_fd(
      ::openat(u.dir.get(), u.temp_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!u.file) {
    err = errno_file_error(errno, "create", path);
    return std::nullopt;
  }
  return u;
}

bool workspace_files::commit(upload& u, domain_error& err) const {
  const as_user user(uid_, gid_);
  if (::fsync(u.file.get()) != 0 && errno != EINVAL) {
    err = errno_file_error(errno, "write", u.path);
    abort(u);
    return false;
  }
  u.file = unique_fd();
  // rename replaces a link at the target as a link; it never writes through it.
  if (::renameat(u.dir.get(), u.temp_name.c_str(), u.dir.get(), u.name.c_str()) != 0) {
    err = errno_file_error(errno, "write", u.path);
    abort(u);
    return false;
  }
  return true;
}

void workspace_files::abort(upload& u) const {
  const as_user user(uid_, gid_);
  u.file = unique_fd();
  if (u.dir) ::unlinkat(u.dir.get(), u.temp_name.c_str(), 0);
}

}  // namespace sandgate::gateway
