// Mount primitives used to build a sandbox's root filesystem. Each throws a
// sys_error naming the call and its arguments, e.g.
// "mount(/usr -> /tmp/usr, MS_BIND|MS_REC): Permission denied".
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sandgate::sandboxing {

// Flag names for messages: "MS_BIND|MS_RDONLY".
std::string mount_flag_names(unsigned long flags);

// mkdir -p with the given mode for created parts.
void make_dirs(const std::string& path, mode_t mode = 0755);
// Creates an empty file to bind a file onto (parent dirs too).
void make_file(const std::string& path, mode_t mode = 0644);
// Writes a new file with the given content and mode.
void write_new_file(const std::string& path, const std::string& content, mode_t mode = 0644);

// Binds source onto target (created as a dir or file to match the source),
// then adds nosuid, and read-only when asked, to it and every mount below it
// (see restrict_mount_tree); the flags the kernel locks in a user namespace
// (nodev, nosuid, noexec, atime) stay.
void bind_path(const std::string& source, const std::string& target, bool read_only);
// A plain bind (recursive) of source onto target, created to match the source;
// its flags are restricted later, together with its parent tree.
void bind_only(const std::string& source, const std::string& target);
// Adds MOUNT_ATTR_* flags (RDONLY, NOSUID, NOEXEC, ...) to the mount at target
// and every mount below it with one mount_setattr(2). Kernels before 5.12
// lack it: then target and each mount in `below` are remounted one by one.
void restrict_mount_tree(const std::string& target, std::uint64_t attr_set,
                         const std::vector<std::string>& below = {});
// Mounts a tmpfs (created dir) with nosuid, nodev and the given options.
void mount_tmpfs(const std::string& target, const std::string& options, unsigned long extra_flags = 0);
// Makes an existing mount read-only (that mount only).
void remount_read_only(const std::string& target);
// Moves the root to new_root (pivot_root to itself, then detach the old root).
void pivot_into(const std::string& new_root);

}  // namespace sandgate::sandboxing
