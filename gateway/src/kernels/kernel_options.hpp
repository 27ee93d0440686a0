#pragma once
// What a kernel is started with: its identity, owner and sandbox, its
// kernelspec and environment, and the limits it runs under.

#include <gateway/kernelspec.hpp>

#include <chrono>
#include <cstddef>
#include <map>
#include <string>

namespace sandgate::gateway {

struct kernel_limits {
  std::chrono::seconds start_timeout{60};
  std::chrono::seconds shutdown_grace{3};
  std::chrono::seconds replay_retention{600};
  std::size_t replay_buffer_bytes = 32 * 1024 * 1024;
  unsigned max_restarts = 5;
  std::size_t max_pending_requests = 10000;
  std::size_t max_replay_sessions = 64;
  std::chrono::seconds max_execution{0};        // of one execute, from any client; 0: none
  std::chrono::seconds interrupt_grace{5};      // after an interrupt at the limit, before a restart
  std::size_t journal_bytes = 8 * 1024 * 1024;  // the kernel's iopub journal; 0: none
  // A message over this (all its parts) is replaced by a note naming its size; 0: none.
  std::size_t max_message_bytes = 128 * 1024 * 1024;
};

struct kernel_options {
  std::string id;
  std::string owner;
  std::string sandbox_id;
  bool owns_sandbox = true;  // the sandbox was made for this kernel alone and ends with it
  kernelspec spec;
  std::map<std::string, std::string> env;           // from the request, merged over the spec's
  std::map<std::string, std::string> program_dirs;  // host dir -> where the sandbox shows it
  kernel_limits limits;
  std::string key;  // HMAC key of a kernel being re-attached; empty: a new random one
  // Its process, socket and file name in the sandbox's run dir, for a kernel
  // being re-attached; empty: made from the id.
  std::string file_name;
};

}  // namespace sandgate::gateway
