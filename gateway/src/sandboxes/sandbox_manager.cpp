#include "sandbox_manager.hpp"

#include "../util/metrics.hpp"

#include "host_sandbox.hpp"
#include "sandbox_paths.hpp"
#include "supervised_sandbox.hpp"

#include <gateway/ids.hpp>
#include <gateway/log.hpp>

namespace sandgate::gateway {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

fs::path operator_policy_file(const config& cfg, const fs::path& exe_dir) {
  return (cfg.policy_file.empty() ? exe_dir / ".." / "share" / "sandgate" / "policies" / "default.json"
                                  : cfg.policy_file)
      .lexically_normal();
}

sandbox_policy_builder read_operator_policy(const fs::path& file) {
  try {
    return sandbox_policy_builder(file);
  } catch (const sandboxing::policy_error& e) {
    throw config_error(e.what());  // "<file>: policy: <field>: <rule>"
  }
}

}  // namespace

sandbox_manager::sandbox_manager(boost::asio::io_context& io, const config& cfg, kernelspec_catalog& specs,
                                 fs::path exe_dir, registry& reg)
    : io_(io),
      cfg_(cfg),
      specs_(specs),
      exe_dir_(std::move(exe_dir)),
      registry_(reg),
      policy_file_(operator_policy_file(cfg, exe_dir_)),
      policies_(read_operator_policy(policy_file_)),
      default_policy_(json::parse(sandboxing::to_json_text(policies_.operator_policy()))),
      slots_(cfg.node_id, cfg.host_id_lock_dir),
      gone_(reg),
      sweep_timer_(io) {
  if (!slots_.unavailable().empty())
    log::warn("host_id_locks_unavailable",
              {{"why", slots_.unavailable()},
               {"effect", "host uid slots are claimed within this gateway only: run as root for sandboxes"}});
  if (slots_.node_shared())
    log::warn("node_shared_on_host",
              {{"node_id", std::to_string(cfg.node_id)},
               {"effect",
                "another gateway on this host runs as the same node: ids of both begin alike (give "
                "each its own --node-id); their sandboxes still get distinct host uids"}});
  load_network_defaults();
  sweep();
}

sandbox_manager::~sandbox_manager() {
  sweep_timer_.cancel();
  for (auto& [id, s] : sandboxes_)
    if (s->box) s->box->destroy("ended");
}

void sandbox_manager::persist(const sandbox_entry& s) {
  registry_.put(registry::kind::sandbox, s.id, "", s.owner, to_record(s));
}

bool sandbox_manager::write_policy(const sandbox_settings& settings, sandbox_entry& entry,
                                   domain_error& err) {
  entry.network = network_default_;
  if (settings.network) {
    auto wanted = network_from(*settings.network, err);
    if (!wanted) return false;
    entry.network = *wanted;
  }
  auto binds = program_binds(specs_);
  const auto policy = policies_.build(settings, entry.network, binds, err);
  if (!policy) return false;
  if (auto e = sandbox_policy_builder::write(*policy, sandbox_paths(cfg_.state_dir, entry.id).policy)) {
    err = *e;
    return false;
  }
  entry.limits = limits_of(*policy);
  entry.expires_at = deadline_after(static_cast<std::int64_t>(policy->ttl_s));
  entry.max_execution_s = policy->max_execution_s;
  entry.egress_opened = sandboxing::egress_on(entry.network);
  entry.program_dirs = std::move(binds);
  return true;
}

std::shared_ptr<sandbox_entry> sandbox_manager::create(const sandbox_settings& settings,
                                                       const std::string& owner, bool implicit,
                                                       bool unsandboxed, domain_error& err, bool pooled) {
  auto s = std::make_shared<sandbox_entry>();
  s->id = new_id(cfg_.node_id);
  s->owner = owner;
  s->implicit = implicit;
  s->pooled = pooled;
  s->created = std::chrono::system_clock::now();
  if (!pooled && !set_idle_timeout(*s, settings, err)) return nullptr;
  s->metadata = settings.metadata;
  s->env = settings.env;
  s->touch();
  specs_.refresh();
  if (!write_policy(settings, *s, err)) return nullptr;
  const sandbox_paths paths(cfg_.state_dir, s->id);
  std::optional<claimed_slot> claimed;  // its lock goes to the supervisor, then is closed here
  if (!unsandboxed) {
    claimed = slots_.claim();
    if (!claimed) {
      err = {fault::at_capacity,
             "This node runs its maximum of " + std::to_string(host_id_slots_per_node) + " sandboxes"};
      return nullptr;
    }
    s->slot = claimed->slot;
  }
  try {
    s->unsandboxed = unsandboxed;
    if (unsandboxed) {
      log::warn("sandbox_unsandboxed", {{"sandbox_id", s->id}});
      s->program_dirs.clear();  // on the host, programs are where they are
      s->box = std::make_shared<host_sandbox>(paths.run_dir, paths.workspace);
    } else {
      auto opts = supervisor_options_for(exe_dir_, paths, s->id, s->slot);
      fs::create_directories(opts.log_path.parent_path());
      opts.host_id_lock_fd = claimed->lock.get();
      // Room for the connection files and sockets, and for four kernels' iopub journals.
      opts.run_dir_bytes = 16 * 1024 * 1024 + 4 * cfg_.iopub_journal_bytes;
      opts.ready_timeout = std::chrono::seconds(cfg_.kernel_start_timeout_s);
      auto box = std::make_shared<supervised_sandbox>(io_, std::move(opts));
      box->start();
      s->box = box;
    }
  } catch (const std::exception& e) {
    if (!unsandboxed) slots_.release(s->slot);
    err = {fault::internal, std::string("cannot create a sandbox: ") + e.what()};
    return nullptr;
  }
  watch_end(s);
  sandboxes_.emplace(s->id, s);
  persist(*s);
  if (!unsandboxed)
    when_ready(s, [this, s](const std::string& error) {
      if (error.empty() && sandboxes_.count(s->id)) {
        persist(*s);  // with the supervisor's pid
        start_egress(*s);
      }
    });
  ++gateway_metrics().sandboxes_created;
  log::info("sandbox_created",
            {{"sandbox_id", s->id}, {"owner", owner}, {"implicit", implicit ? "yes" : "no"}});
  return s;
}

bool sandbox_manager::set_idle_timeout(sandbox_entry& s, const sandbox_settings& settings,
                                       domain_error& err) const {
  // The operator's idle timeout binds every sandbox, implicit ones too; a
  // creator may ask for a shorter one.
  const auto timeout = settings.idle_timeout_s.value_or(cfg_.sandbox_idle_timeout_s);
  if (cfg_.sandbox_idle_timeout_s > 0 && timeout > cfg_.sandbox_idle_timeout_s) {
    err = {fault::invalid, "idle_timeout_s " + std::to_string(timeout) +
                               " is above this gateway's maximum of " +
                               std::to_string(cfg_.sandbox_idle_timeout_s)};
    return false;
  }
  s.idle_timeout_s = timeout;
  return true;
}

bool sandbox_manager::poolable(const sandbox_settings& settings) {
  return !settings.memory_bytes && !settings.cpu && !settings.pids && !settings.workspace_bytes &&
         !settings.network && settings.env.empty();
}

std::optional<domain_error> sandbox_manager::claim(sandbox_entry& s, const sandbox_settings& settings,
                                                   const std::string& owner, bool implicit) {
  domain_error err;
  if (settings.ttl_s)
    if (auto e = policies_.check_ttl(*settings.ttl_s)) return e;
  if (!set_idle_timeout(s, settings, err)) return err;
  s.owner = owner;
  s.implicit = implicit;
  s.pooled = false;
  s.metadata = settings.metadata;
  s.created = std::chrono::system_clock::now();
  s.touch();
  persist(s);
  return std::nullopt;
}

void sandbox_manager::when_ready(const std::shared_ptr<sandbox_entry>& s,
                                 std::function<void(std::string error)> done) {
  s->box->when_ready([s, done = std::move(done)](const std::string& error) {
    if (error.empty())
      if (auto* sup = dynamic_cast<supervised_sandbox*>(s->box.get())) {
        if (sup->expires_at() > 0) s->expires_at = sup->expires_at();
        s->root_pid = sup->root_pid();
      }
    done(error);
  });
}

std::shared_ptr<sandbox_entry> sandbox_manager::find(const std::string& id) const {
  auto it = sandboxes_.find(id);
  return it == sandboxes_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<sandbox_entry>> sandbox_manager::list() const {
  std::vector<std::shared_ptr<sandbox_entry>> out;
  for (const auto& [id, s] : sandboxes_)
    if (!s->pooled) out.push_back(s);
  return out;
}

void sandbox_manager::destroy(const std::string& id, const std::string& reason) {
  auto it = sandboxes_.find(id);
  if (it == sandboxes_.end()) return;
  auto s = it->second;
  sandboxes_.erase(it);
  remember_gone(id, reason);
  registry_.end(registry::kind::sandbox, id, reason);
  for (const auto& k : s->kernels) {
    remember_gone(k, reason);
    registry_.end(registry::kind::kernel, k, reason);
  }
  stop_egress(id);
  s->box->destroy(reason);
  sandbox_paths(cfg_.state_dir, id).remove(reason == "deleted" || reason == "culled");
  if (!s->unsandboxed) slots_.release(s->slot);
  ++gateway_metrics().sandboxes_ended[reason];
  log::info("sandbox_destroyed", {{"sandbox_id", id}, {"reason", reason}});
}

void sandbox_manager::extend(const std::shared_ptr<sandbox_entry>& s, std::uint64_t ttl_s,
                             std::function<void(std::optional<domain_error>)> done) {
  if (auto e = policies_.check_ttl(ttl_s)) return done(std::move(e));
  const std::int64_t expires_at = deadline_after(static_cast<std::int64_t>(ttl_s));
  s->box->extend(expires_at, [this, s, expires_at, done = std::move(done)](const std::string& error) {
    if (!error.empty()) return done(domain_error{fault::conflict, "cannot extend the sandbox: " + error});
    s->expires_at = expires_at;
    if (sandboxes_.count(s->id)) persist(*s);
    done(std::nullopt);
  });
}

}  // namespace sandgate::gateway
