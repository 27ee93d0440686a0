#pragma once
// File operations inside a sandbox's workspace, for the files API, done from
// the host on a descriptor of the workspace directory. Every path is
// resolved with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
// RESOLVE_NO_XDEV), so neither "..", an absolute path, nor a link that code
// in the sandbox planted can lead anywhere outside the workspace; only
// directories and regular files are ever opened for content.

#include "../util/domain_error.hpp"

#include <sandboxing/unique_fd.hpp>

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::gateway {

using sandboxing::unique_fd;

struct workspace_entry {
  std::string name;
  std::string type;  // "file", "directory", "symlink", "other"
  std::uint64_t size = 0;
  std::int64_t mtime_s = 0;
};

class workspace_files {
 public:
  // `root`: a descriptor of the workspace directory (O_PATH is enough).
  // Every operation runs with `uid`:`gid` (the sandbox user on the host) as
  // its filesystem identity.
  workspace_files(unique_fd root, uid_t uid, gid_t gid) : root_(std::move(root)), uid_(uid), gid_(gid) {}

  // The path with empty and "." components dropped; nothing (and `err`)
  // when it is absolute, has "..", a NUL, or is too long. "" is the workspace.
  static std::optional<std::string> normalize(std::string_view path, domain_error& err);

  // What `path` is, without following a final link: S_IFDIR, S_IFREG, ... or
  // nothing when it does not exist (err 404) or cannot be reached.
  std::optional<struct stat> stat(const std::string& path, domain_error& err) const;
  // A regular file opened for reading, with its stat.
  unique_fd open_read(const std::string& path, struct stat& st, domain_error& err) const;
  std::optional<std::vector<workspace_entry>> list(const std::string& path, domain_error& err) const;
  // Removes a file, link or directory (with its content).
  bool remove(const std::string& path, domain_error& err) const;

  // An upload goes to a temporary file beside its target (parents are made),
  // and takes its name only when complete.
  struct upload {
    unique_fd dir;
    unique_fd file;
    std::string temp_name;
    std::string name;
    std::string path;
  };
  std::optional<upload> begin_upload(const std::string& path, domain_error& err) const;
  bool commit(upload& u, domain_error& err) const;
  void abort(upload& u) const;

 private:
  unique_fd resolve(const std::string& path, int flags, domain_error& err) const;
  unique_fd make_parents(const std::string& dir, domain_error& err) const;

  unique_fd root_;
  uid_t uid_;
  gid_t gid_;
};

// From errno, for an operation on `path`.
domain_error errno_file_error(int error, const std::string& what, const std::string& path);

}  // namespace sandgate::gateway
