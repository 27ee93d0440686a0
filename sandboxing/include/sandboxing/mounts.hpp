// Mount primitives used to build a sandbox's root filesystem. Each throws a
// sys_error naming the call and its arguments, e.g.
// "mount(/usr -> /tmp/usr, MS_BIND|MS_REC): Permission denied".
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

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
// then remounts it read-only when asked, keeping the flags the kernel locks
// in a user namespace (nodev, nosuid, noexec, atime) and adding nosuid.
void bind_path(const std::string& source, const std::string& target, bool read_only);
// A bind of a device node: stays writable, gains nosuid and noexec.
void bind_device(const std::string& source, const std::string& target);
// Mounts a tmpfs (created dir) with nosuid, nodev and the given options.
void mount_tmpfs(const std::string& target, const std::string& options, unsigned long extra_flags = 0);
// Makes an existing mount read-only.
void remount_read_only(const std::string& target);
// Moves the root to new_root (pivot_root to itself, then detach the old root).
void pivot_into(const std::string& new_root);

}  // namespace sandgate::sandboxing
