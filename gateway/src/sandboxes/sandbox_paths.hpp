#pragma once
// Where a sandbox's files are under the gateway's state dir, and what starts
// or re-attaches to its supervisor.

#include "supervised_sandbox.hpp"

#include <filesystem>
#include <string>

namespace sandgate::gateway {

struct sandbox_paths {
  sandbox_paths(const std::filesystem::path& state_dir, const std::string& id);

  std::filesystem::path run_dir;    // run/<id>: /run/sandgate inside
  std::filesystem::path control;    // control/<id>.sock: the supervisor's control socket
  std::filesystem::path policy;     // policies/<id>.json: the sandbox's policy
  std::filesystem::path log;        // logs/<id>.log: the supervisor's stderr
  std::filesystem::path workspace;  // workspaces/<id>: a host sandbox's workspace

  // Removes them (the log only `with_log`); what is missing is no error.
  void remove(bool with_log) const;
};

// The supervisor of sandbox `id` in host id slot `slot`, with the policy
// written at `paths.policy`.
[[nodiscard]] supervisor_options supervisor_options_for(const std::filesystem::path& exe_dir,
                                                        const sandbox_paths& paths, const std::string& id,
                                                        unsigned slot);

}  // namespace sandgate::gateway
