// The inner side of a launch: the setup pipeline run by the cloned process,
// which then becomes the supervisor.
#pragma once

#include <sys/types.h>

#include "sandboxing/id_map.hpp"
#include "sandboxing/policy.hpp"
#include "sandboxing/rootfs.hpp"
#include "sandboxing/supervisor.hpp"

namespace sandgate::sandboxing::detail {

// What the outer process tells the inner one once its maps and cgroup are in place.
struct go_message {
  pid_t host_pid = 0;
};

struct init_plan {
  const policy* sandbox_policy = nullptr;
  id_plan ids;
  rootfs_plan rootfs;
  supervisor_config supervisor;  // host_pid is filled in from go_message
};

// Runs in the cloned child: waits for go on handshake_fd, runs the setup
// steps, reports "ok" or the failed step's error, then runs the supervisor.
// Never returns.
[[noreturn]] void run_inner(init_plan& plan, int handshake_fd);

}  // namespace sandgate::sandboxing::detail
