// Where the Node driver's scripts come from.
#pragma once

#include <string>

namespace sandgate::javascript_kernel {

// The driver (driver.js, with rewrite.js and typescript.js beside it):
// $SANDGATE_JAVASCRIPT_DRIVER if set; else <exe dir>/../share/sandgate/javascript/driver.js,
// the data file of the install tree and of the build tree; else (a build
// tree's binary run in a sandbox, which sees only the binary's own
// directory) the copies built into the binary, written to a private
// directory under $TMPDIR or /tmp that lives as long as this object.
class driver_files {
 public:
  driver_files();
  ~driver_files();
  driver_files(const driver_files&) = delete;
  driver_files& operator=(const driver_files&) = delete;

  const std::string& driver_path() const noexcept { return driver_path_; }

 private:
  std::string driver_path_;
  std::string private_dir_;  // empty unless the built-in copies were written
};

}  // namespace sandgate::javascript_kernel
