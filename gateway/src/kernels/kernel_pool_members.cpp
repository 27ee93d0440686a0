// kernel_manager's side of the warm pools: starting and ending members, and
// handing one over to the principal whose request claims it.

#include "kernel_manager.hpp"

#include "../util/metrics.hpp"

#include <gateway/ids.hpp>
#include <gateway/log.hpp>

#include <nlohmann/json.hpp>

#include <dirent.h>
#include <algorithm>
#include <fstream>
#include <limits>
#include <vector>

namespace sandgate::gateway {
namespace {

// Proportional set size of a process and all its descendants, in bytes: what
// a sandbox costs the machine, its share of shared pages counted once. 0 when
// it cannot be read.
std::uint64_t tree_pss_bytes(int root_pid) {
  if (root_pid <= 0) return 0;
  std::uint64_t total = 0;
  std::vector<int> unvisited{root_pid};
  while (!unvisited.empty()) {
    const int pid = unvisited.back();
    unvisited.pop_back();
    const std::string dir = "/proc/" + std::to_string(pid);
    // A process's children, listed by the thread that forked each: a few
    // small reads, where a scan of /proc would read every process's stat.
    if (DIR* tasks = ::opendir((dir + "/task").c_str())) {
      while (const dirent* e = ::readdir(tasks)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream children(dir + "/task/" + e->d_name + "/children");
        for (int child; children >> child;)
          unvisited.push_back(child);
      }
      ::closedir(tasks);
    }
    std::ifstream rollup(dir + "/smaps_rollup");
    for (std::string key; rollup >> key;) {
      std::uint64_t kib = 0;
      if (key == "Pss:" && rollup >> kib) {
        total += kib * 1024;
        break;
      }
      rollup.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
  }
  return total;
}

// Request variables a pool kernel can take after its start: the KERNEL_*
// names Jupyter clients send (user name, working directory) say who and
// where, and change nothing in how an interpreter starts. Any other name
// (PYTHONPATH, LD_PRELOAD, ...) needs a fresh process.
bool settable_later(const std::map<std::string, std::string>& env) {
  return std::all_of(env.begin(), env.end(), [](const auto& kv) { return is_kernel_variable(kv.first); });
}

// A cell that takes the path every cell takes (compile, run) and changes
// nothing a user could see. Python's also runs the display formatters once,
// which a silent cell does not reach: a first result then costs what any
// later one does.
std::string warm_up_code(const std::string& language) {
  if (language == "python") return "(lambda: None)(); get_ipython().display_formatter.format(1)";
  if (language == "bash") return ":";
  return "";
}

}  // namespace

void kernel_manager::start_pool_member(const std::string& name,
                                       std::function<void(std::optional<pool_member>)> done) {
  specs_.refresh();
  const kernelspec* found = specs_.find(name);
  if (!found) {
    log::warn("pool_kernelspec_missing", {{"kernel_name", name}});
    return done(std::nullopt);
  }
  kernelspec spec = *found;
  if (!cfg_.pool_preload.empty() && !spec.preload_option.empty()) {
    std::string modules;
    for (const auto& m : cfg_.pool_preload)
      modules += (modules.empty() ? "" : ",") + m;
    spec.argv.push_back(spec.preload_option);
    spec.argv.push_back(modules);
  }
  domain_error err;
  auto box = sandboxes_.create({}, "", true, unsandboxed(name), err, true);
  if (!box) {
    log::warn("pool_member_failed", {{"kernel_name", name}, {"error", err.message}});
    return done(std::nullopt);
  }
  auto k = kernel::create(io_, zmq_, options_for(new_id(cfg_.node_id), "", spec, *box), box->box, output_);
  box->kernels.insert(k->id());
  pool_starting_.emplace(k->id(), k);
  auto record = k->reattach_record();
  record["pooled"] = true;
  registry_.put(registry::kind::kernel, k->id(), box->id, "", record.dump());
  k->start([this, k, box, done = std::move(done)](const std::string& error) {
    if (!error.empty()) {
      pool_starting_.erase(k->id());
      log::warn("pool_member_failed", {{"kernel_name", k->name()}, {"error", error}});
      k->terminate("failed to start");
      sandboxes_.destroy(box->id, "failed");
      return done(std::nullopt);
    }
    // A first cell costs more than the next ones (an interpreter's code
    // paths are cold): the pool pays for it while the kernel waits.
    k->execute_silently(warm_up_code(k->language()), [this, k, box, done](const std::string& warm_up_error) {
      if (!pool_starting_.erase(k->id())) return;  // ended by a stop meanwhile
      if (!warm_up_error.empty())
        log::warn("pool_warm_up_failed", {{"kernel_id", k->id()}, {"error", warm_up_error}});
      pool_member m;
      m.k = k;
      m.box = box;
      m.memory_bytes = tree_pss_bytes(box->root_pid);
      log::info("pool_member_ready", {{"kernel_name", k->name()},
                                      {"sandbox_id", box->id},
                                      {"pss_bytes", std::to_string(m.memory_bytes)}});
      done(std::move(m));
    });
  });
}

void kernel_manager::retire_pool_member(pool_member& m) {
  m.k->terminate("retired from the pool");
  sandboxes_.destroy(m.box->id, "retired");
}

void kernel_manager::give_claimed(const std::shared_ptr<kernel>& k, sandbox_entry& box,
                                  const std::map<std::string, std::string>& env, const principal& who,
                                  start_handler done) {
  k->assign(who.name, box.implicit, env);
  enlist(k, box);
  box.touch();
  registry_.put(registry::kind::kernel, k->id(), box.id, who.name, k->reattach_record().dump());
  log::info(
      "kernel_claimed",
      {{"kernel_id", k->id()}, {"kernel_name", k->name()}, {"owner", who.name}, {"sandbox_id", box.id}});
  k->apply_env(env, [this, k, done = std::move(done)](const std::string& error) {
    if (error.empty()) {
      ++gateway_metrics().kernel_starts;
      return done(k, std::nullopt);
    }
    // The kernel is the owner's but not as asked: end it rather than run
    // code in the wrong environment.
    log::warn("kernel_claim_failed", {{"kernel_id", k->id()}, {"error", error}});
    shutdown_kernel(k->id(), [] {});
    done(nullptr, domain_error{fault::internal, "Kernel " + k->name() + " failed to start: " + error});
  });
}

bool kernel_manager::claim_pooled_kernel(const std::string& name,
                                         const std::map<std::string, std::string>& env, const principal& who,
                                         const start_handler& done) {
  if (!pool_.pools(name) || !settable_later(env)) return false;
  auto m = pool_.claim(name);
  if (!m) return false;
  if (!env.empty() && !m->k->can_apply_env()) {
    pool_.give_back(std::move(*m));
    return false;
  }
  auto box = m->box;
  if (auto e = sandboxes_.claim(*box, {}, who.name, true)) {
    pool_.give_back(std::move(*m));
    return false;
  }
  // The TTL runs from the claim, not from when the member was made.
  sandboxes_.extend(box, sandboxes_.max_ttl_s(), [box](std::optional<domain_error> e) {
    if (e) log::warn("sandbox_extend_failed", {{"sandbox_id", box->id}, {"error", e->message}});
  });
  give_claimed(m->k, *box, env, who, done);
  return true;
}

bool kernel_manager::take_reserved_kernel(sandbox_entry& box, const std::string& name,
                                          const std::map<std::string, std::string>& env, const principal& who,
                                          const start_handler& done) {
  auto it = reserved_.find(box.id);
  if (it == reserved_.end() || it->second->name() != name || !settable_later(env) ||
      (!env.empty() && !it->second->can_apply_env()))
    return false;
  auto k = it->second;
  reserved_.erase(it);
  if (k->ended()) return false;
  // The sandbox's own variables are already in the kernel's environment.
  give_claimed(k, box, env, who, done);
  return true;
}

std::shared_ptr<sandbox_entry> kernel_manager::claim_pooled_sandbox(const sandbox_settings& settings,
                                                                    const principal& who, domain_error& err) {
  const std::string name = default_kernel_name();
  if (!pool_.pools(name) || !sandbox_manager::poolable(settings)) return nullptr;
  auto m = pool_.claim(name);
  if (!m) return nullptr;
  auto box = m->box;
  if (auto e = sandboxes_.claim(*box, settings, who.name, false)) {
    pool_.give_back(std::move(*m));
    err = *e;
    return nullptr;
  }
  m->k->assign(who.name, false, {});
  reserved_.emplace(box->id, m->k);
  const auto ttl = settings.ttl_s.value_or(sandboxes_.max_ttl_s());
  // Sent before anyone's when_ready(): the supervisor answers in order, so
  // the deadline a creator is shown is already the new one.
  sandboxes_.extend(box, ttl, [box](std::optional<domain_error> e) {
    if (e) log::warn("sandbox_extend_failed", {{"sandbox_id", box->id}, {"error", e->message}});
  });
  log::info("sandbox_claimed", {{"sandbox_id", box->id}, {"owner", who.name}, {"kernel_name", name}});
  return box;
}

}  // namespace sandgate::gateway
