#include "driver_files.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <vector>

#include "driver_sources.hpp"

namespace sandgate::javascript_kernel {
namespace {

std::string make_private_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/sandgate-javascript-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "mkdtemp(" + pattern + ")");
  }
  return buffer.data();
}

}  // namespace

driver_files::driver_files() {
  if (const char* configured = std::getenv("SANDGATE_JAVASCRIPT_DRIVER");
      configured != nullptr && *configured != '\0') {
    driver_path_ = configured;
    return;
  }
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed =
        exe.parent_path().parent_path() / "share" / "sandgate" / "javascript" / "driver.js";
    if (std::filesystem::exists(installed, ec)) {
      driver_path_ = installed.string();
      return;
    }
  }
  private_dir_ = make_private_dir();
  for (const auto& [name, text] : built_in_driver_sources()) {
    const auto path = std::filesystem::path(private_dir_) / name;
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!file) {
      throw std::runtime_error("cannot write " + path.string());
    }
  }
  driver_path_ = private_dir_ + "/driver.js";
}

driver_files::~driver_files() {
  if (!private_dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(private_dir_, ignored);
  }
}

}  // namespace sandgate::javascript_kernel
