// Errors that name the failed system call and its arguments, as in
// "mount(/usr -> /newroot/usr, MS_BIND|MS_RDONLY): Permission denied".
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace sandgate::sandboxing {

// A failed system call: what() is "<call>: <strerror(errno)>".
class sys_error : public std::runtime_error {
 public:
  sys_error(std::string_view call, int error_number);
  int error_number() const noexcept { return error_number_; }

 private:
  int error_number_;
};

// Throws sys_error(call, errno) when result is -1; returns result otherwise.
long check_sys(long result, std::string_view call);

// Writes text to a file that must already exist (proc and cgroup files);
// the error names the path and the text.
void write_file(const std::string& path, std::string_view text);
// Reads a whole (small) file; throws sys_error naming the path.
std::string read_file(const std::string& path);

}  // namespace sandgate::sandboxing
