// The file API in the supervisor (control_protocol.hpp, "Files"): every
// operation on a path as the sandbox sees it, done here (inside the
// sandbox's mount namespace and root) with the sandbox user as filesystem
// identity (setfsuid/setfsgid, and its group alone), so that it reaches
// exactly what the sandbox user can, no more. Contents go to the gateway as
// descriptors it copies out (pidfd_getfd): a file opened for reading, a
// temporary file beside the target for writing (renamed into place when the
// gateway commits it), or a memfd holding a listing or a range of lines.
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <system_error>

#include "supervisor_loop.hpp"

namespace sandgate::sandboxing::detail {
namespace {

constexpr std::size_t max_path_bytes = 4096;
constexpr std::uint64_t max_line_scan_bytes = 256u << 20;  // what a line range reads at most
constexpr std::size_t max_list_entries = 100000;
constexpr std::size_t max_delete_entries = 100000;  // a recursive delete
constexpr const char* temp_prefix = ".sandgate-upload-";

// An operation's failure: errno and the message the gateway maps to a status.
struct file_error {
  int code;
  std::string message;
};

[[noreturn]] void fail(int code, const std::string& what, const std::string& path) {
  throw file_error{code, what + " " + path + ": " + std::generic_category().message(code)};
}

const char* type_of(mode_t mode) {
  if (S_ISREG(mode)) return "file";
  if (S_ISDIR(mode)) return "directory";
  if (S_ISLNK(mode)) return "symlink";
  return "other";
}

std::int64_t mtime_ms(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
}

json stat_json(const struct stat& st) {
  return {{"type", type_of(st.st_mode)}, {"size", st.st_size}, {"mode", st.st_mode & 07777},
          {"mtime_ms", mtime_ms(st)},    {"uid", st.st_uid},   {"gid", st.st_gid}};
}

// The path as the sandbox sees it: absolute as given, relative to /workspace.
std::string sandbox_path(const json& message, const char* field) {
  std::string path = message.value(field, std::string());
  if (path.empty() || path.size() > max_path_bytes || path.find('\0') != std::string::npos)
    throw file_error{EINVAL, std::string(field) + " must be a path of 1 to 4096 bytes without NUL"};
  if (path.front() != '/') path = "/workspace/" + path;
  while (path.size() > 1 && path.back() == '/')
    path.pop_back();
  return path;
}

// Opens `path` as the caller's identity, never through a magic link
// (/proc/<pid>/fd/*, /proc/<pid>/root, ...): the supervisor's own would lead
// to its descriptors (its cgroup directory, its sockets), which no process of
// the sandbox user may open. Every path of every operation goes through here.
unique_fd open_path(const std::string& path, std::uint64_t flags, mode_t mode = 0) {
  open_how how{};
  how.flags = flags | O_CLOEXEC;
  how.mode = (flags & O_CREAT) ? mode : 0;
  how.resolve = RESOLVE_NO_MAGICLINKS;
  return unique_fd(static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how)));
}

// A path's parent directory, opened, and its last component.
struct parent_and_name {
  unique_fd dir;
  std::string name;
};

parent_and_name split(const std::string& path, const char* what) {
  const auto slash = path.rfind('/');
  parent_and_name out;
  out.name = path.substr(slash + 1);
  if (out.name.empty() || out.name == "." || out.name == "..")
    throw file_error{EINVAL, std::string(what) + " " + path + ": not a name in a directory"};
  const std::string parent = slash == 0 ? "/" : path.substr(0, slash);
  out.dir = open_path(parent, O_PATH | O_DIRECTORY);
  if (!out.dir) fail(errno, what, path);
  return out;
}

unique_fd new_memfd(const char* name);

// Lines `first` to `last` (1-based, inclusive) of the open file, into a memfd: {"fd", "size", "eof"}.
json read_lines(int fd, const std::string& path, std::uint64_t first, std::uint64_t last);

unique_fd new_memfd(const char* name) {
  unique_fd fd(::memfd_create(name, MFD_CLOEXEC));
  if (!fd) throw file_error{errno, std::string("memfd_create: ") + std::generic_category().message(errno)};
  return fd;
}

void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw file_error{errno, std::string("write(memfd): ") + std::generic_category().message(errno)};
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

json read_lines(int fd, const std::string& path, std::uint64_t first, std::uint64_t last) {
  unique_fd out = new_memfd("lines");
  std::uint64_t line = 1;
  std::uint64_t scanned = 0;
  char buffer[64 * 1024];
  std::string kept;
  bool eof = false;
  while (line <= last) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(errno, "read", path);
    if (n == 0) {
      eof = true;
      break;
    }
    scanned += static_cast<std::uint64_t>(n);
    if (scanned > max_line_scan_bytes && line < first)
      throw file_error{EFBIG, "read " + path + ": line " + std::to_string(first) +
                                  " is past the first 256 MiB; read it by byte range"};
    std::string_view chunk(buffer, static_cast<std::size_t>(n));
    while (!chunk.empty() && line <= last) {
      const auto newline = chunk.find('\n');
      const auto piece = chunk.substr(0, newline == std::string_view::npos ? chunk.size() : newline + 1);
      if (line >= first) kept.append(piece);
      if (newline != std::string_view::npos) ++line;
      chunk.remove_prefix(piece.size());
    }
    if (kept.size() >= 1u << 20) {
      write_all(out.get(), kept);
      kept.clear();
    }
  }
  write_all(out.get(), kept);
  const auto size = ::lseek(out.get(), 0, SEEK_CUR);
  ::lseek(out.get(), 0, SEEK_SET);
  return {{"size", size}, {"eof", eof}, {"fd", out.release()}};
}

// mkdir -p of `path`, as the caller's identity; returns the directory opened.
unique_fd make_dirs(const std::string& path) {
  if (unique_fd dir = open_path(path, O_PATH | O_DIRECTORY)) return dir;
  if (errno != ENOENT) fail(errno, "mkdir", path);
  if (path == "/") fail(ENOENT, "mkdir", path);
  const auto slash = path.rfind('/');
  const unique_fd parent = make_dirs(slash == 0 ? "/" : path.substr(0, slash));
  const std::string name = path.substr(slash + 1);
  if (::mkdirat(parent.get(), name.c_str(), 0755) != 0 && errno != EEXIST) fail(errno, "mkdir", path);
  unique_fd dir(::openat(parent.get(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) fail(errno, "mkdir", path);
  return dir;
}

// Removes `name` in `dir` and what is below it (no link followed), at most `budget` entries.
void remove_tree(int dir, const std::string& name, const std::string& shown, std::size_t& budget) {
  if (budget-- == 0) throw file_error{E2BIG, "delete " + shown + ": more than 100000 entries"};
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) fail(errno, "delete", shown);
  if (!S_ISDIR(st.st_mode)) {
    if (::unlinkat(dir, name.c_str(), 0) != 0) fail(errno, "delete", shown);
    return;
  }
  const int fd = ::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) fail(errno, "delete", shown);
  DIR* listing = ::fdopendir(fd);
  if (!listing) {
    ::close(fd);
    fail(errno, "delete", shown);
  }
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(listing)) {
    const std::string entry = e->d_name;
    if (entry != "." && entry != "..") names.push_back(entry);
  }
  for (const auto& entry : names)
    remove_tree(::dirfd(listing), entry, shown + "/" + entry, budget);
  ::closedir(listing);
  if (::unlinkat(dir, name.c_str(), AT_REMOVEDIR) != 0) fail(errno, "delete", shown);
}

}  // namespace

// The sandbox user as filesystem identity for one operation.
class supervisor::as_sandbox_user {
 public:
  explicit as_sandbox_user(const confinement& c) : groups_(c.may_setgroups) {
    if (groups_) {
      const gid_t only[] = {static_cast<gid_t>(c.gid)};
      if (::setgroups(1, only) != 0) groups_ = false;
    }
    ::setfsgid(c.gid);
    ::setfsuid(c.uid);
  }
  ~as_sandbox_user() {
    ::setfsuid(0);
    ::setfsgid(0);
    if (groups_) {
      const gid_t root[] = {0};
      (void)::setgroups(1, root);
    }
  }
  as_sandbox_user(const as_sandbox_user&) = delete;
  as_sandbox_user& operator=(const as_sandbox_user&) = delete;

 private:
  bool groups_;
};

int supervisor::hand_out(unique_fd fd) {
  if (handoffs_.size() >= 64) handoffs_.erase(handoffs_.begin());
  const int n = fd.get();
  handoffs_[n] = std::move(fd);
  return n;
}

control::reply supervisor::do_file(const json& message) {
  control::reply result;
  result.req = message.value("req", std::uint64_t{0});
  const std::string op = message.value("op", std::string());
  try {
    const as_sandbox_user user(config_.confine);
    if (op == "file_open" || op == "file_lines") {
      const auto path = sandbox_path(message, "path");
      unique_fd fd = open_path(path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
      if (!fd) fail(errno, "open", path);
      struct stat st {};
      if (::fstat(fd.get(), &st) != 0) fail(errno, "stat", path);
      if (S_ISDIR(st.st_mode)) fail(EISDIR, "read", path);
      if (!S_ISREG(st.st_mode)) throw file_error{EINVAL, "read " + path + ": not a regular file"};
      if (op == "file_open") {
        result.data = stat_json(st);
        result.data["fd"] = hand_out(std::move(fd));
      } else {
        result.data = read_lines(fd.get(), path, message.value("start", std::uint64_t{1}),
                                 message.value("end", std::numeric_limits<std::uint64_t>::max()));
        result.data["fd"] = hand_out(unique_fd(result.data["fd"].get<int>()));
      }
    } else if (op == "file_stat") {
      const auto path = sandbox_path(message, "path");
      const bool follow = message.value("follow", true);
      unique_fd fd = open_path(path, O_PATH | (follow ? 0 : O_NOFOLLOW));
      if (!fd) fail(errno, "stat", path);
      struct stat st {};
      if (::fstat(fd.get(), &st) != 0) fail(errno, "stat", path);
      result.data = stat_json(st);
      if (S_ISLNK(st.st_mode)) {
        char target[max_path_bytes + 1];
        const ssize_t n = ::readlinkat(fd.get(), "", target, max_path_bytes);
        if (n >= 0) result.data["target"] = std::string(target, static_cast<std::size_t>(n));
      }
    } else if (op == "file_list") {
      const auto path = sandbox_path(message, "path");
      unique_fd fd = open_path(path, O_RDONLY | O_DIRECTORY);
      if (!fd) fail(errno, "list", path);
      DIR* dir = ::fdopendir(fd.get());
      if (!dir) fail(errno, "list", path);
      fd.release();  // the DIR owns it now
      json entries = json::array();
      bool truncated = false;
      while (const dirent* e = ::readdir(dir)) {
        const std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        if (entries.size() >= max_list_entries) {
          truncated = true;
          break;
        }
        struct stat st {};
        json entry = {{"name", name}, {"type", "other"}, {"size", nullptr}, {"mtime_ms", nullptr}};
        if (::fstatat(::dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
          entry["type"] = type_of(st.st_mode);
          entry["size"] = st.st_size;
          entry["mtime_ms"] = mtime_ms(st);
        }
        entries.push_back(std::move(entry));
      }
      ::closedir(dir);
      unique_fd out = new_memfd("listing");
      write_all(out.get(), entries.dump(-1, ' ', false, json::error_handler_t::replace));
      const auto size = ::lseek(out.get(), 0, SEEK_CUR);
      ::lseek(out.get(), 0, SEEK_SET);
      result.data = {{"size", size},
                     {"count", entries.size()},
                     {"truncated", truncated},
                     {"fd", hand_out(std::move(out))}};
    } else if (op == "file_create") {
      const auto path = sandbox_path(message, "path");
      const auto slash = path.rfind('/');
      const std::string name = path.substr(slash + 1);
      if (name.empty() || name == "." || name == "..")
        throw file_error{EINVAL, "write " + path + ": not a file name"};
      const std::string parent_path = slash == 0 ? "/" : path.substr(0, slash);
      unique_fd parent = message.value("parents", true) ? make_dirs(parent_path)
                                                        : open_path(parent_path, O_PATH | O_DIRECTORY);
      if (!parent) fail(errno, "write", path);
      struct stat st {};
      if (::fstatat(parent.get(), name.c_str(), &st, 0) == 0 && S_ISDIR(st.st_mode))
        fail(EISDIR, "write", path);
      static std::mt19937_64 random{std::random_device{}()};
      char suffix[17];
      std::snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(random()));
      const std::string temp = std::string(temp_prefix) + suffix;
      unique_fd fd(
          ::openat(parent.get(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
      if (!fd) fail(errno, "write", path);
      const std::string key = parent_path + "/" + temp;
      if (uploads_.size() >= 64) {  // the oldest unfinished one goes
        ::unlinkat(uploads_.begin()->second.dir.get(), uploads_.begin()->second.temp.c_str(), 0);
        uploads_.erase(uploads_.begin());
      }
      uploads_[key] = upload{std::move(parent), temp, name};
      result.data = {{"temp", key}, {"fd", hand_out(std::move(fd))}};
    } else if (op == "file_commit" || op == "file_abort") {
      const std::string key = message.value("temp", std::string());
      const auto found = uploads_.find(key);
      if (found == uploads_.end()) throw file_error{ENOENT, "no upload in progress at " + key};
      const upload u = std::move(found->second);
      uploads_.erase(found);
      if (op == "file_abort") {
        ::unlinkat(u.dir.get(), u.temp.c_str(), 0);
      } else if (::renameat(u.dir.get(), u.temp.c_str(), u.dir.get(), u.name.c_str()) != 0) {
        const int e = errno;
        ::unlinkat(u.dir.get(), u.temp.c_str(), 0);
        fail(e, "write", message.value("path", u.name));
      }
    } else if (op == "file_mkdir") {
      const auto path = sandbox_path(message, "path");
      if (message.value("parents", false)) {
        make_dirs(path);
      } else {
        const auto where = split(path, "mkdir");
        if (::mkdirat(where.dir.get(), where.name.c_str(), 0755) != 0) fail(errno, "mkdir", path);
      }
    } else if (op == "file_rename") {
      const auto from = sandbox_path(message, "from");
      const auto to = sandbox_path(message, "to");
      const auto a = split(from, "rename");
      const auto b = split(to, "rename");
      const unsigned flags = message.value("overwrite", false) ? 0u : RENAME_NOREPLACE;
      if (::renameat2(a.dir.get(), a.name.c_str(), b.dir.get(), b.name.c_str(), flags) != 0)
        fail(errno, "rename " + from + " to", to);
    } else if (op == "file_delete") {
      const auto path = sandbox_path(message, "path");
      const auto where = split(path, "delete");
      struct stat st {};
      if (::fstatat(where.dir.get(), where.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        fail(errno, "delete", path);
      if (S_ISDIR(st.st_mode) && message.value("files_only", false)) fail(EISDIR, "delete", path);
      if (S_ISDIR(st.st_mode) && !message.value("recursive", false)) {
        if (::unlinkat(where.dir.get(), where.name.c_str(), AT_REMOVEDIR) != 0) fail(errno, "delete", path);
      } else {
        std::size_t budget = max_delete_entries;
        remove_tree(where.dir.get(), where.name, path, budget);
      }
    } else {
      throw file_error{EINVAL, "unknown op \"" + op + "\""};
    }
    result.ok = true;
  } catch (const file_error& e) {
    result.ok = false;
    result.error = e.message;
    result.data = {{"errno", e.code}};
  }
  return result;
}

json supervisor::listening_ports() const {
  json out = json::array();
  std::set<std::pair<unsigned, std::string>> seen;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    FILE* f = std::fopen(table, "re");
    if (!f) continue;
    char line[512];
    bool header = true;
    while (std::fgets(line, sizeof line, f)) {
      if (std::exchange(header, false)) continue;
      char local[64] = {};
      unsigned port = 0, state = 0;
      // "  0: 0100007F:0BB8 00000000:0000 0A ..."
      if (std::sscanf(line, " %*d: %63[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x", local, &port, &state) != 3)
        continue;
      if (state != 0x0A) continue;  // TCP_LISTEN
      const std::string hex(local);
      std::string address = "other";
      if (hex == "0100007F")
        address = "127.0.0.1";
      else if (hex == "00000000")
        address = "0.0.0.0";
      else if (hex == "00000000000000000000000001000000")
        address = "::1";
      else if (hex == "00000000000000000000000000000000")
        address = "::";
      if (seen.insert({port, address}).second) out.push_back({{"port", port}, {"address", address}});
    }
    std::fclose(f);
  }
  return out;
}

void supervisor::abort_uploads() {
  const as_sandbox_user user(config_.confine);
  for (const auto& [key, u] : uploads_)
    ::unlinkat(u.dir.get(), u.temp.c_str(), 0);
  uploads_.clear();
}

}  // namespace sandgate::sandboxing::detail
