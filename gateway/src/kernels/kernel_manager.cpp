#include "kernel_manager.hpp"

#include "child_processes.hpp"
#include "host_sandbox.hpp"
#include "supervised_sandbox.hpp"

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
    : io_(io), cfg_(cfg), specs_(specs), sigchld_(io, SIGCHLD), exe_dir_(std::move(exe_dir)) {
  policy_file_ = cfg_.policy_file.empty()
                     ? exe_dir_ / ".." / "share" / "sandgate" / "policies" / "default.json"
                     : cfg_.policy_file;
  policy_file_ = policy_file_.lexically_normal();
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

namespace {

// True when the sandbox's read-only system binds already show `path`.
bool visible_in_sandbox(const fs::path& path) {
  for (const char* root : {"/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/lib32/"})
    if (path.string().rfind(root, 0) == 0) return true;
  return false;
}

}  // namespace

fs::path kernel_manager::sandbox_policy(const std::string& kernel_id, const kernelspec& spec) {
  // The kernel's program (and its kernelspec dir, for {resource_dir}) must be
  // visible inside: bind what the system dirs do not show, read-only, at the
  // same path. Everything else comes from the operator's policy as it is.
  std::vector<fs::path> binds;
  if (!spec.argv.empty() && fs::path(spec.argv[0]).is_absolute()) {
    const auto program_dir = fs::path(spec.argv[0]).parent_path();
    if (!visible_in_sandbox(program_dir)) binds.push_back(program_dir);
  }
  if (binds.empty()) return policy_file_;
  std::ifstream in(policy_file_);
  auto policy = nlohmann::json::parse(in, nullptr, false);
  if (!policy.is_object())
    throw std::runtime_error("cannot read the sandbox policy " + policy_file_.string());
  auto& mounts = policy["mounts"];
  if (!mounts.is_array()) mounts = nlohmann::json::array();
  for (const auto& dir : binds)
    mounts.push_back({{"source", dir.string()}, {"target", dir.string()}, {"read_only", true}});
  const auto path = cfg_.state_dir / "policies" / (kernel_id + ".json");
  fs::create_directories(path.parent_path());
  std::ofstream(path) << policy.dump(2);
  return path;
}

unsigned kernel_manager::claim_slot() {
  unsigned slot = 0;
  while (used_slots_.count(slot))
    ++slot;
  used_slots_.insert(slot);
  return slot;
}

std::shared_ptr<sandbox> kernel_manager::make_sandbox(const std::string& kernel_id, const kernelspec& spec) {
  const auto& exempt = cfg_.unsandboxed_kernels;
  if (std::find(exempt.begin(), exempt.end(), spec.name) != exempt.end() ||
      std::find(exempt.begin(), exempt.end(), "*") != exempt.end()) {
    log::warn("kernel_unsandboxed", {{"kernel_id", kernel_id}, {"kernel_name", spec.name}});
    return std::make_shared<host_sandbox>(cfg_.state_dir / "run" / kernel_id,
                                          cfg_.state_dir / "workspaces" / kernel_id);
  }
  supervisor_options opts;
  opts.program = exe_dir_ / "sandgate-sandbox";
  opts.policy_file = sandbox_policy(kernel_id, spec);
  opts.id = kernel_id;
  opts.run_dir = cfg_.state_dir / "run" / kernel_id;
  opts.control_path = cfg_.state_dir / "control" / (kernel_id + ".sock");
  opts.log_path = cfg_.state_dir / "logs" / (kernel_id + ".log");
  fs::create_directories(opts.log_path.parent_path());
  opts.host_id_slot = claim_slot();
  opts.ready_timeout = std::chrono::seconds(cfg_.kernel_start_timeout_s);
  slots_[kernel_id] = opts.host_id_slot;
  auto box = std::make_shared<supervised_sandbox>(io_, std::move(opts));
  box->start();
  return box;
}

void kernel_manager::release(const std::string& kernel_id, bool keep_log) {
  kernels_.erase(kernel_id);
  std::error_code ec;
  fs::remove(cfg_.state_dir / "policies" / (kernel_id + ".json"), ec);
  if (!keep_log) fs::remove(cfg_.state_dir / "logs" / (kernel_id + ".log"), ec);
  if (auto it = slots_.find(kernel_id); it != slots_.end()) {
    used_slots_.erase(it->second);
    slots_.erase(it);
  }
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

  std::shared_ptr<sandbox> box;
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
    release(k->id(), true);  // its sandbox log tells why
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
  release(id);  // gone from listings at once; a second DELETE gets 404
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
