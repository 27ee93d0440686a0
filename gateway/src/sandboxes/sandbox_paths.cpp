#include "sandbox_paths.hpp"

namespace sandgate::gateway {
namespace fs = std::filesystem;

sandbox_paths::sandbox_paths(const fs::path& state_dir, const std::string& id)
    : run_dir(state_dir / "run" / id),
      control(state_dir / "control" / (id + ".sock")),
      policy(state_dir / "policies" / (id + ".json")),
      log(state_dir / "logs" / (id + ".log")),
      workspace(state_dir / "workspaces" / id) {}

void sandbox_paths::remove(bool with_log) const {
  std::error_code ec;
  fs::remove_all(run_dir, ec);
  fs::remove(control, ec);
  fs::remove(policy, ec);
  if (with_log) fs::remove(log, ec);
  fs::remove_all(workspace, ec);
}

supervisor_options supervisor_options_for(const fs::path& exe_dir, const sandbox_paths& paths,
                                          const std::string& id, unsigned slot) {
  supervisor_options opts;
  opts.program = exe_dir / "sandgate-sandbox";
  opts.policy_file = paths.policy;
  opts.id = id;
  opts.run_dir = paths.run_dir;
  opts.control_path = paths.control;
  opts.log_path = paths.log;
  opts.host_id_slot = slot;
  return opts;
}

}  // namespace sandgate::gateway
