#include "kernel_manager.hpp"

#include "child_processes.hpp"

#include <gateway/ids.hpp>
#include <gateway/log.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <fstream>

namespace sandgate::gateway {
namespace fs = std::filesystem;

kernel_manager::kernel_manager(boost::asio::io_context& io, const config& cfg, kernelspec_catalog& specs,
                               fs::path exe_dir)
    : io_(io),
      cfg_(cfg),
      specs_(specs),
      sigchld_(io, SIGCHLD),
      sandboxes_(io, cfg, specs, std::move(exe_dir)) {
  zmq_.set(zmq::ctxopt::blocky, false);
  // A sandbox that ends by itself (TTL) or is culled takes its kernels with it.
  sandboxes_.on_sandbox_end([this](const std::shared_ptr<sandbox_entry>& s, const std::string& reason) {
    for (const auto& id : std::set<std::string>(s->kernels))
      if (auto k = find(id)) {
        kernels_.erase(id);
        sandboxes_.remember_gone(id, reason);
        k->terminate("sandbox " + reason);
      }
  });
  sandboxes_.set_idle_probe([this](const sandbox_entry& s) {
    for (const auto& id : s.kernels)
      if (auto k = find(id); k && k->execution_state() == "busy") return false;
    return true;
  });
  watch_children();
}

kernel_manager::~kernel_manager() {
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

void kernel_manager::release(const std::shared_ptr<kernel>& k, const std::string& reason) {
  kernels_.erase(k->id());
  sandboxes_.remember_gone(k->id(), reason);
  auto s = sandboxes_.find(k->sandbox_id());
  if (!s) return;
  s->kernels.erase(k->id());
  if (s->implicit && s->kernels.empty()) sandboxes_.destroy(s->id, reason);
}

void kernel_manager::start_kernel(const std::string& requested, std::map<std::string, std::string> env,
                                  const std::string& owner, const std::string& sandbox_id,
                                  start_handler done) {
  const std::string name = requested.empty() ? default_kernel_name() : requested;
  specs_.refresh();
  const kernelspec* found = specs_.find(name);
  if (!found) return done(nullptr, api_error{404, "Not Found", "No such kernel: " + name});
  const kernelspec spec = *found;  // a copy: making a sandbox refreshes the catalog
  if (kernels_.size() >= cfg_.max_kernels)
    return done(nullptr, api_error{403, "Forbidden",
                                   "The gateway runs its maximum of " + std::to_string(cfg_.max_kernels) +
                                       " kernels; shut one down first"});
  std::shared_ptr<sandbox_entry> box;
  if (!sandbox_id.empty()) {
    box = sandboxes_.find(sandbox_id);
    if (!box || (owner != "admin" && box->owner != owner)) {
      const auto why = sandboxes_.gone(sandbox_id);
      return done(nullptr, api_error{404, why ? *why : "Not Found", "Sandbox does not exist: " + sandbox_id});
    }
  } else {
    api_error err;
    box = sandboxes_.create({}, owner, true, unsandboxed(name), err);
    if (!box) return done(nullptr, err);
  }
  kernel_options opts;
  opts.id = new_id(cfg_.node_id);
  opts.owner = owner;
  opts.sandbox_id = box->id;
  opts.owns_sandbox = box->implicit;
  opts.spec = spec;
  opts.env = box->env;
  for (auto& [k, v] : env)
    opts.env[k] = std::move(v);
  opts.limits.start_timeout = std::chrono::seconds(cfg_.kernel_start_timeout_s);
  opts.limits.shutdown_grace = std::chrono::seconds(cfg_.kernel_shutdown_grace_s);
  opts.limits.replay_retention = std::chrono::seconds(cfg_.replay_retention_s);
  opts.limits.replay_buffer_bytes = cfg_.replay_buffer_limit_bytes;
  opts.limits.max_restarts = cfg_.max_kernel_restarts;
  opts.limits.max_execution = std::chrono::seconds(box->max_execution_s);

  auto k = std::make_shared<kernel>(io_, zmq_, std::move(opts), box->box);
  kernels_.emplace(k->id(), k);
  box->kernels.insert(k->id());
  box->touch();
  log::info("kernel_starting",
            {{"kernel_id", k->id()}, {"kernel_name", name}, {"owner", owner}, {"sandbox_id", box->id}});
  k->start([this, k, done = std::move(done)](const std::string& error) {
    if (error.empty()) return done(k, std::nullopt);
    release(k, "failed");
    done(nullptr,
         api_error{500, "Internal Server Error", "Kernel " + k->name() + " failed to start: " + error});
  });
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

void kernel_manager::delete_sandbox(const std::string& sandbox_id, std::function<void()> done) {
  auto s = sandboxes_.find(sandbox_id);
  if (!s) return done();
  for (const auto& id : s->kernels)
    if (auto k = find(id)) {
      kernels_.erase(id);
      k->terminate("sandbox deleted");
    }
  sandboxes_.destroy(sandbox_id, "deleted");
  done();
}

void kernel_manager::shutdown_all(std::function<void()> done) {
  auto remaining = std::make_shared<std::size_t>(kernels_.size());
  if (*remaining == 0) return done();
  auto all = list();
  for (const auto& k : all)
    shutdown_kernel(k->id(), [remaining, done] {
      if (--*remaining == 0) done();
    });
}

}  // namespace sandgate::gateway
