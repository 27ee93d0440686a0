// What the outer sandgate-sandbox prepares on the host before cloning: the
// run dir, the workspace dir, the control socket, descriptors of bind sources.
#pragma once

#include <cstdint>
#include <string>

#include "sandboxing/unique_fd.hpp"

namespace sandgate::sandboxing::detail {

// Opens dir as O_PATH (creating it with mode 0700 when missing and allowed),
// makes it owned by uid:gid with mode 0700; sets created when it was made.
unique_fd prepare_owned_dir(const std::string& dir, std::uint32_t uid, std::uint32_t gid, bool create,
                            bool& created);
// Gives a whole tree (symlinks not followed) to uid:gid: a workspace reused
// by a sandbox with other host ids becomes its own; errors ignored.
void chown_tree(const std::string& dir, std::uint32_t uid, std::uint32_t gid);
// O_PATH descriptor of an existing path; throws sys_error.
unique_fd open_path(const std::string& path);
// "/proc/self/fd/N": a path to the descriptor that mount(2) accepts as a source.
std::string fd_path(int fd);
// A listening unix socket at path (a stale socket is replaced), mode 0600.
unique_fd listen_control_socket(const std::string& path);
// rm -rf of a directory tree (no symlinks followed); errors ignored.
void remove_tree(const std::string& path);

}  // namespace sandgate::sandboxing::detail
