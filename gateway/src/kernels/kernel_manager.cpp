#include "kernel_manager.hpp"

#include "host_sandbox.hpp"

#include <gateway/ids.hpp>
#include <gateway/log.hpp>

#include <algorithm>
#include <csignal>

namespace sandgate::gateway {
namespace fs = std::filesystem;

kernel_manager::kernel_manager(boost::asio::io_context& io, const config& cfg, kernelspec_catalog& specs)
    : io_(io), cfg_(cfg), specs_(specs), sigchld_(io, SIGCHLD) {
  zmq_.set(zmq::ctxopt::blocky, false);
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
    host_sandbox::reap_children();
    watch_children();
  });
}

std::string kernel_manager::default_kernel_name() const {
  if (!cfg_.default_kernel.empty()) return cfg_.default_kernel;
  if (specs_.find("python")) return "python";
  if (specs_.find("python3")) return "python3";
  return specs_.all().empty() ? "python" : specs_.all().begin()->first;
}

std::unique_ptr<sandbox> kernel_manager::make_sandbox(const std::string& kernel_id, const kernelspec& spec) {
  const auto& allowed = cfg_.unsandboxed_kernels;
  if (std::find(allowed.begin(), allowed.end(), spec.name) != allowed.end() ||
      std::find(allowed.begin(), allowed.end(), "*") != allowed.end())
    return std::make_unique<host_sandbox>(cfg_.state_dir / "run" / kernel_id,
                                          cfg_.state_dir / "workspaces" / kernel_id);
  return nullptr;
}

void kernel_manager::start_kernel(const std::string& requested, std::map<std::string, std::string> env,
                                  const std::string& owner, start_handler done) {
  const std::string name = requested.empty() ? default_kernel_name() : requested;
  specs_.refresh();
  const kernelspec* spec = specs_.find(name);
  if (!spec) return done(nullptr, api_error{404, "Not Found", "No such kernel: " + name});
  if (kernels_.size() >= cfg_.max_kernels)
    return done(nullptr, api_error{403, "Forbidden",
                                   "The gateway runs its maximum of " + std::to_string(cfg_.max_kernels) +
                                       " kernels; shut one down first"});
  kernel_options opts;
  opts.id = new_id(cfg_.node_id);
  opts.owner = owner;
  opts.spec = *spec;
  opts.env = std::move(env);
  opts.limits.start_timeout = std::chrono::seconds(cfg_.kernel_start_timeout_s);
  opts.limits.shutdown_grace = std::chrono::seconds(cfg_.kernel_shutdown_grace_s);
  opts.limits.replay_retention = std::chrono::seconds(cfg_.replay_retention_s);
  opts.limits.replay_buffer_bytes = cfg_.replay_buffer_limit_bytes;
  opts.limits.max_restarts = cfg_.max_kernel_restarts;

  std::unique_ptr<sandbox> box;
  try {
    box = make_sandbox(opts.id, *spec);
  } catch (const std::exception& e) {
    return done(nullptr,
                api_error{500, "Internal Server Error", std::string("cannot create a sandbox: ") + e.what()});
  }
  if (!box)
    return done(nullptr, api_error{500, "Internal Server Error",
                                   "sandboxed kernels are not available on this gateway"});

  auto k = std::make_shared<kernel>(io_, zmq_, std::move(opts), std::move(box));
  kernels_.emplace(k->id(), k);
  log::info("kernel_starting", {{"kernel_id", k->id()}, {"kernel_name", name}, {"owner", owner}});
  k->start([this, k, done = std::move(done)](const std::string& error) {
    if (error.empty()) return done(k, std::nullopt);
    kernels_.erase(k->id());
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
  k->shutdown([k, done = std::move(done)](const std::string&) { done(); });
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
