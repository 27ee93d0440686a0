// Short ipc:// endpoints for xeus 2.4.1.
#pragma once

#include <xeus/xkernel_configuration.hpp>

namespace sandgate::kernels {

// xeus 2.4.1 reads each socket's ZMQ_LAST_ENDPOINT into a 32-byte buffer and
// throws EINVAL ("Invalid argument") when "ipc://<ip>-<port>" does not fit,
// i.e. for an ip longer than about 23 characters. While this scope lives, the
// process works inside the socket directory and config.m_ip is the bare file
// prefix, so the endpoint stays short; clients still connect to the full
// path. Restores the working directory when it ends. Use it only around the
// (synchronous) bind; a no-op for tcp or an ip without a directory.
class ipc_directory_scope {
 public:
  explicit ipc_directory_scope(xeus::xconfiguration& config);
  ~ipc_directory_scope();
  ipc_directory_scope(const ipc_directory_scope&) = delete;
  ipc_directory_scope& operator=(const ipc_directory_scope&) = delete;

 private:
  int previous_cwd_ = -1;  // fd of the directory to return to
};

}  // namespace sandgate::kernels
