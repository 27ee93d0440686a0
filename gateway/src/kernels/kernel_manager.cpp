#include "kernel_manager.hpp"

#include "../util/json_input.hpp"
#include "../util/metrics.hpp"

#include "../sandboxes/child_processes.hpp"

#include <gateway/ids.hpp>
#include <gateway/log.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <thread>
#include <utility>

namespace sandgate::gateway {
namespace fs = std::filesystem;

kernel_manager::kernel_manager(boost::asio::io_context& io, const config& cfg, kernelspec_catalog& specs,
                               fs::path exe_dir, registry& reg)
    : io_(io),
      cfg_(cfg),
      specs_(specs),
      registry_(reg),
      output_(std::make_shared<output_budget>(cfg.output_memory_limit_bytes > 0
                                                  ? cfg.output_memory_limit_bytes
                                                  : output_budget::host_default_bytes())),
      sigchld_(io, SIGCHLD),
      sandboxes_(io, cfg, specs, std::move(exe_dir), reg),
      pool_(
          io,
          pool_settings{cfg.pools, cfg.pool_max_depth, cfg.pool_memory_bytes,
                        std::max(1u, std::thread::hardware_concurrency()),
                        std::chrono::seconds(sandboxes_.max_ttl_s() / 2)},
          [this](const std::string& name, auto done) { start_pool_member(name, std::move(done)); },
          [this](pool_member& m) { retire_pool_member(m); }),
      memory_release_(io, std::chrono::seconds(2)) {
  zmq_.set(zmq::ctxopt::blocky, false);
  // ZeroMQ refuses a socket past its context's limit (1023 by default) with
  // EMFILE: each kernel has four, as many kernels as may run, pools' too.
  // Never above what this libzmq can take (setting more throws).
  const auto sockets = std::min<std::size_t>(std::max<std::size_t>(4 * cfg.most_kernels() + 64, 1023),
                                             zmq_.get(zmq::ctxopt::socket_limit));
  zmq_.set(zmq::ctxopt::max_sockets, static_cast<int>(sockets));
  // A sandbox that ends by itself (TTL) or is culled takes its kernels with it.
  sandboxes_.on_sandbox_end([this](const std::shared_ptr<sandbox_entry>& s, const std::string& reason) {
    if (auto m = pool_.forget(s->id)) m->k->terminate("sandbox " + reason, reason);
    if (auto it = reserved_.find(s->id); it != reserved_.end()) {
      it->second->terminate("sandbox " + reason, reason);
      reserved_.erase(it);
    }
    for (const auto& id : std::set<std::string>(s->kernels))
      if (auto k = find(id)) {
        kernels_.erase(id);
        forget(id, reason);
        k->terminate("sandbox " + reason, reason);
      }
  });
  // Idle: no kernel busy, starting or restarting, and none that sent or
  // was sent a message (comms, completions, executes) within the timeout.
  sandboxes_.set_idle_probe([this](const sandbox_entry& s) {
    const auto recent = std::chrono::steady_clock::now() - std::chrono::seconds(s.idle_timeout_s);
    for (const auto& id : s.kernels) {
      auto k = find(id);
      if (!k) continue;
      const auto& state = k->execution_state();
      if (state == "busy" || state == "starting" || state == "restarting" || k->active_at() > recent)
        return false;
    }
    return true;
  });
  // Egress opened by a PATCH reaches the sandbox's running kernels too.
  sandboxes_.set_kernel_env_setter([this](const std::string& id, const auto& env, auto done) {
    if (auto k = find(id)) return k->apply_env(env, std::move(done));
    done("no such kernel");
  });
  watch_children();
}

kernel_manager::~kernel_manager() {
  end_unclaimed();
  for (auto& [id, k] : kernels_)
    k.reset();
  zmq_.shutdown();
}

void kernel_manager::watch_children() {
  sigchld_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    reap_children();
    watch_children();
  });
}

std::string kernel_manager::default_kernel_name() const {
  if (!cfg_.default_kernel.empty()) return cfg_.default_kernel;
  if (specs_.find("python")) return "python";
  if (specs_.find("python3")) return "python3";
  return specs_.all().empty() ? "python" : specs_.all().begin()->first;
}

bool kernel_manager::unsandboxed(const std::string& kernel_name) const {
  const auto& exempt = cfg_.unsandboxed_kernels;
  return std::find(exempt.begin(), exempt.end(), kernel_name) != exempt.end() ||
         std::find(exempt.begin(), exempt.end(), "*") != exempt.end();
}

void kernel_manager::forget(const std::string& kernel_id, const std::string& reason) {
  sandboxes_.remember_gone(kernel_id, reason);
  registry_.end(registry::kind::kernel, kernel_id, reason);
  memory_release_.soon();
}

void kernel_manager::enlist(const std::shared_ptr<kernel>& k, sandbox_entry& box) {
  kernels_.emplace(k->id(), k);
  box.kernels.insert(k->id());
  k->on_execution_finished([this, id = k->id()](const execution_record& r) {
    registry_.put_execution(id, r.msg_id, r.to_json());
  });
  // Marked running until it ends, for a gateway that restarts meanwhile.
  k->on_execution_started([this, id = k->id()](const execution_record& r) {
    registry_.put_execution(id, r.msg_id, r.to_stored_json(), true);
  });
}

// The executions a kernel that did not come back was running: they end as
// errors that say so.
void kernel_manager::end_running_executions(const std::string& kernel_id, const std::string& reason) {
  try {
    for (const auto& text : registry_.running_executions(kernel_id)) {
      auto record = parse_json(text);
      if (!record.is_object() || !record.contains("msg_id") || !record["msg_id"].is_string()) continue;
      const std::string why = "the kernel was " + reason + " while the gateway restarted";
      record["status"] = "error";
      record["error"] = {{"ename", "KernelLost"}, {"evalue", why}, {"traceback", {"KernelLost: " + why}}};
      record["truncated"] = true;
      registry_.put_execution(kernel_id, record["msg_id"].get<std::string>(), record.dump());
    }
  } catch (const std::exception& e) {
    log::error("registry_read_failed", {{"error", e.what()}});
  }
}

std::optional<std::string> kernel_manager::stored_execution(const std::string& kernel_id,
                                                            const std::string& msg_id) const {
  try {
    return registry_.execution(kernel_id, msg_id);
  } catch (const std::exception& e) {
    log::error("registry_read_failed", {{"error", e.what()}});
    return std::nullopt;
  }
}

void kernel_manager::release(const std::shared_ptr<kernel>& k, const std::string& reason) {
  kernels_.erase(k->id());
  forget(k->id(), reason);
  auto s = sandboxes_.find(k->sandbox_id());
  if (!s) return;
  s->kernels.erase(k->id());
  if (s->implicit && s->kernels.empty()) sandboxes_.destroy(s->id, reason);
}

std::optional<domain_error> kernel_manager::over_quota(const principal& who, bool new_sandbox,
                                                       std::uint64_t memory_bytes, bool new_kernel) const {
  const auto& q = who.limits;
  if (!q.sandboxes && !q.kernels && !q.memory_bytes) return std::nullopt;
  std::uint64_t sandboxes = 0, memory = 0, kernels = 0;
  for (const auto& s : sandboxes_.list())
    if (s->owner == who.name) {
      ++sandboxes;
      memory += s->limits.memory_bytes;
    }
  for (const auto& [id, k] : kernels_)
    if (k->owner() == who.name) ++kernels;
  auto refuse = [](const std::string& what, std::uint64_t limit) {
    return domain_error{fault::over_quota,
                        "Over quota: at most " + std::to_string(limit) + " " + what + "; delete some first"};
  };
  if (new_sandbox && q.sandboxes && sandboxes + 1 > *q.sandboxes) return refuse("sandboxes", *q.sandboxes);
  if (new_sandbox && q.memory_bytes && memory + memory_bytes > *q.memory_bytes)
    return refuse("bytes of sandbox memory", *q.memory_bytes);
  if (new_kernel && q.kernels && kernels + 1 > *q.kernels) return refuse("kernels", *q.kernels);
  return std::nullopt;
}

std::optional<domain_error> kernel_manager::refuse_new_sandbox() const {
  if (!draining_) return std::nullopt;
  return domain_error{fault::at_capacity, "This node is draining: it makes no new sandboxes", "draining"};
}

std::shared_ptr<sandbox_entry> kernel_manager::create_sandbox(const sandbox_settings& settings,
                                                              const principal& who, domain_error& err) {
  if (auto e = refuse_new_sandbox()) {
    err = *e;
    return nullptr;
  }
  const std::uint64_t memory = settings.memory_bytes.value_or(sandboxes_.default_limits().memory_bytes);
  if (auto e = over_quota(who, true, memory, false)) {
    err = *e;
    return nullptr;
  }
  if (auto s = claim_pooled_sandbox(settings, who, err); s || !err.message.empty()) return s;
  return sandboxes_.create(settings, who.name, false, unsandboxed("*"), err);
}

void kernel_manager::start_kernel(const std::string& requested, std::map<std::string, std::string> env,
                                  const principal& who, const std::string& sandbox_id, start_handler done) {
  const std::string& owner = who.name;
  const std::string name = requested.empty() ? default_kernel_name() : requested;
  specs_.refresh();
  const kernelspec* found = specs_.find(name);
  if (!found) return done(nullptr, domain_error{fault::not_found, "No such kernel: " + name});
  const kernelspec spec = *found;  // a copy: making a sandbox refreshes the catalog
  if (kernels_.size() >= cfg_.max_kernels)
    return done(nullptr, domain_error{fault::at_capacity, "The gateway runs its maximum of " +
                                                              std::to_string(cfg_.max_kernels) +
                                                              " kernels; shut one down first"});
  std::shared_ptr<sandbox_entry> box;
  if (!sandbox_id.empty()) {
    box = sandboxes_.find(sandbox_id);
    if (!box || box->pooled || !who.sees(box->owner)) {
      const auto why = sandboxes_.gone(sandbox_id);
      return done(nullptr,
                  domain_error{fault::not_found, "Sandbox does not exist: " + sandbox_id, why.value_or("")});
    }
    if (auto e = over_quota(who, false, 0, true)) return done(nullptr, *e);
    if (take_reserved_kernel(*box, name, env, who, done)) return;
  } else {
    if (auto e = refuse_new_sandbox()) return done(nullptr, *e);
    if (auto e = over_quota(who, true, sandboxes_.default_limits().memory_bytes, true))
      return done(nullptr, *e);
    // KERNEL_NETWORK (the env filter lets KERNEL_* through) asks for a network
    // of the operator's ceiling; a pooled kernel has the default one.
    sandbox_settings settings;
    if (auto it = env.find("KERNEL_NETWORK"); it != env.end())
      settings.network = sandbox_manager::network_text_value(it->second);
    if (!settings.network && claim_pooled_kernel(name, env, who, done)) return;
    domain_error err;
    box = sandboxes_.create(settings, owner, true, unsandboxed(name), err);
    if (!box) return done(nullptr, err);
  }
  kernel_options opts = options_for(new_id(cfg_.node_id), owner, spec, *box);
  for (auto& [k, v] : env)
    opts.env[k] = std::move(v);

  auto k = kernel::create(io_, zmq_, std::move(opts), box->box, output_);
  enlist(k, *box);
  box->touch();
  registry_.put(registry::kind::kernel, k->id(), box->id, owner, k->reattach_record().dump());
  log::info("kernel_starting",
            {{"kernel_id", k->id()}, {"kernel_name", name}, {"owner", owner}, {"sandbox_id", box->id}});
  const auto started = std::chrono::steady_clock::now();
  k->start([this, k, started, done = std::move(done)](const std::string& error) {
    auto& counters = gateway_metrics();
    if (error.empty()) {
      ++counters.kernel_starts;
      counters.kernel_start_seconds.observe(std::chrono::steady_clock::now() - started);
      return done(k, std::nullopt);
    }
    ++counters.kernel_start_failures;
    release(k, "failed");
    done(nullptr, domain_error{fault::internal, "Kernel " + k->name() + " failed to start: " + error});
  });
}

kernel_options kernel_manager::options_for(const std::string& id, const std::string& owner,
                                           const kernelspec& spec, const sandbox_entry& box) const {
  kernel_options opts;
  opts.id = id;
  opts.owner = owner;
  opts.sandbox_id = box.id;
  opts.owns_sandbox = box.implicit;
  opts.spec = spec;
  opts.program_dirs = box.program_dirs;
  opts.env = box.env;
  opts.limits.start_timeout = std::chrono::seconds(cfg_.kernel_start_timeout_s);
  opts.limits.shutdown_grace = std::chrono::seconds(cfg_.kernel_shutdown_grace_s);
  opts.limits.replay_retention = std::chrono::seconds(cfg_.replay_retention_s);
  opts.limits.replay_buffer_bytes = cfg_.replay_buffer_limit_bytes;
  opts.limits.max_restarts = cfg_.max_kernel_restarts;
  opts.limits.max_execution = std::chrono::seconds(box.max_execution_s);
  opts.limits.journal_bytes = cfg_.iopub_journal_bytes;
  opts.limits.max_message_bytes = cfg_.max_message_bytes;
  return opts;
}

std::shared_ptr<kernel> kernel_manager::find(const std::string& id) const {
  auto it = kernels_.find(id);
  return it == kernels_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<kernel>> kernel_manager::list() const {
  std::vector<std::shared_ptr<kernel>> out;
  for (const auto& [id, k] : kernels_)
    out.push_back(k);
  return out;
}

void kernel_manager::shutdown_kernel(const std::string& id, std::function<void()> done) {
  auto k = find(id);
  if (!k) return done();
  kernels_.erase(id);  // gone from listings at once; a second DELETE gets 404
  k->shutdown([this, k, done = std::move(done)](const std::string&) {
    release(k);
    done();
  });
}

void kernel_manager::delete_sandbox(const std::string& sandbox_id, const std::function<void()>& done) {
  auto s = sandboxes_.find(sandbox_id);
  if (!s) return done();
  if (auto it = reserved_.find(sandbox_id); it != reserved_.end()) {
    it->second->terminate("sandbox deleted", "deleted");
    reserved_.erase(it);
  }
  for (const auto& id : s->kernels)
    if (auto k = find(id)) {
      kernels_.erase(id);
      k->terminate("sandbox deleted", "deleted");
    }
  sandboxes_.destroy(sandbox_id, "deleted");
  done();
}

void kernel_manager::shutdown_all(const std::function<void()>& done) {
  end_unclaimed();
  auto remaining = std::make_shared<std::size_t>(kernels_.size());
  if (*remaining == 0) return done();
  auto all = list();
  for (const auto& k : all)
    shutdown_kernel(k->id(), [remaining, done] {
      if (--*remaining == 0) done();
    });
}

}  // namespace sandgate::gateway
