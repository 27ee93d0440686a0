#include "ipc_directory_scope.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <exception>
#include <string>
#include <system_error>

namespace sandgate::kernels {

ipc_directory_scope::ipc_directory_scope(xeus::xconfiguration& config) {
  const auto slash = config.m_ip.rfind('/');
  if (config.m_transport != "ipc" || slash == std::string::npos) {
    return;
  }
  const std::string dir = slash == 0 ? "/" : config.m_ip.substr(0, slash);
  previous_cwd_ = ::open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (previous_cwd_ < 0) {
    throw std::system_error(errno, std::generic_category(), "open(\".\")");
  }
  if (::chdir(dir.c_str()) != 0) {
    const int error = errno;
    ::close(previous_cwd_);
    throw std::system_error(error, std::generic_category(), "chdir(" + dir + ")");
  }
  config.m_ip = config.m_ip.substr(slash + 1);
}

ipc_directory_scope::~ipc_directory_scope() {
  if (previous_cwd_ < 0) {
    return;
  }
  if (::fchdir(previous_cwd_) != 0) {
    std::terminate();  // cells would run in the socket directory: refuse
  }
  ::close(previous_cwd_);
}

}  // namespace sandgate::kernels
