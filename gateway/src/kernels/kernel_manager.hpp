#pragma once
// The kernels of this gateway: admission (starting kernels count), start,
// lookup by id and owner, shutdown, and reaping of host child processes.

#include "../auth/principal.hpp"
#include "../sandboxes/sandbox_manager.hpp"
#include "../util/memory_release.hpp"
#include "kernel.hpp"
#include "kernel_pool.hpp"

#include <gateway/config.hpp>
#include <gateway/kernelspec.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace sandgate::gateway {

class kernel_manager {
 public:
  using start_handler = std::function<void(std::shared_ptr<kernel>, std::optional<domain_error>)>;

  // `exe_dir`: where sandgate lives; sandgate-sandbox and share/ are found from it.
  kernel_manager(boost::asio::io_context& io, const config& cfg, kernelspec_catalog& specs,
                 std::filesystem::path exe_dir, registry& reg);
  ~kernel_manager();

  // Takes back what an earlier gateway on this state dir left running (see
  // sandbox_manager::restore): its kernels are listed at once, as starting,
  // and become idle once their sandbox answers and they answer kernel_info;
  // those that cannot be re-attached end as "lost".
  void restore();
  // For a stop that leaves sandboxes running: kernels on the host are shut
  // down (they cannot outlive the gateway), sandboxed ones left running.
  void leave_all_running(const std::function<void()>& done);

  // In the sandbox `sandbox_id` (the caller's), or in a fresh sandbox of the
  // default policy that ends with the kernel when it is empty.
  void start_kernel(const std::string& name, std::map<std::string, std::string> env, const principal& who,
                    const std::string& sandbox_id, start_handler done);
  // An explicit sandbox (POST /api/sandboxes), within the principal's quotas.
  std::shared_ptr<sandbox_entry> create_sandbox(const sandbox_settings& settings, const principal& who,
                                                domain_error& err);
  [[nodiscard]] std::shared_ptr<kernel> find(const std::string& id) const;
  // An ended execution's record (JSON) as the registry kept it: for records
  // past the kernel's in-memory bounds, or from before a gateway restart.
  [[nodiscard]] std::optional<std::string> stored_execution(const std::string& kernel_id,
                                                            const std::string& msg_id) const;
  [[nodiscard]] std::vector<std::shared_ptr<kernel>> list() const;
  void shutdown_kernel(const std::string& id, std::function<void()> done);
  void shutdown_all(const std::function<void()>& done);

  [[nodiscard]] std::string default_kernel_name() const;
  [[nodiscard]] kernelspec_catalog& specs() noexcept { return specs_; }
  [[nodiscard]] sandbox_manager& sandboxes() noexcept { return sandboxes_; }
  [[nodiscard]] boost::asio::io_context& io() noexcept { return io_; }
  // Hands freed heap pages back once the gateway is quiet (see memory_release).
  [[nodiscard]] memory_release& memory() noexcept { return memory_release_; }
  // The kernels' output held in memory, against its budget.
  [[nodiscard]] const output_budget& output() const noexcept { return *output_; }
  // Ends every kernel of a sandbox, then the sandbox (DELETE /api/sandboxes/{id}).
  void delete_sandbox(const std::string& sandbox_id, const std::function<void()>& done);

  // The operator let this kernelspec ("*": every one) run outside a sandbox.
  [[nodiscard]] bool unsandboxed(const std::string& kernel_name) const;

  // A draining node makes no new sandboxes (explicit or a kernel's own): such
  // creates fail with fault::at_capacity, so a balancer sends them elsewhere.
  // Kernels in the sandboxes it has still start.
  void set_draining(bool draining) noexcept { draining_ = draining; }
  [[nodiscard]] bool draining() const noexcept { return draining_; }
  // Kernels that may still start before --max-kernels, starting ones counted.
  [[nodiscard]] std::size_t free_kernel_slots() const noexcept {
    return kernels_.size() >= cfg_.max_kernels ? 0 : cfg_.max_kernels - kernels_.size();
  }

  // Starts filling the warm pools (after restore()).
  void fill_pools() { pool_.begin(); }
  [[nodiscard]] const kernel_pool& pool() const noexcept { return pool_; }

 private:
  // fault::at_capacity while draining.
  [[nodiscard]] std::optional<domain_error> refuse_new_sandbox() const;
  // 429 when one more sandbox (of `memory_bytes`) or kernel would pass a quota.
  std::optional<domain_error> over_quota(const principal& who, bool new_sandbox, std::uint64_t memory_bytes,
                                         bool new_kernel) const;
  // Forgets a kernel; an implicit sandbox goes with it.
  void release(const std::shared_ptr<kernel>& k, const std::string& reason = "deleted");
  // Its id answers 404 with `reason` from now on, here and after a restart.
  void forget(const std::string& kernel_id, const std::string& reason);
  void end_running_executions(const std::string& kernel_id, const std::string& reason);
  // Registers a new or re-attached kernel and keeps its ended executions.
  void enlist(const std::shared_ptr<kernel>& k, sandbox_entry& box);
  void watch_children();
  void end_unclaimed();
  // Warm pools (kernel_pool_members.cpp): a member's start and end, and
  // claims by a new kernel or sandbox.
  void start_pool_member(const std::string& name, std::function<void(std::optional<pool_member>)> done);
  void retire_pool_member(pool_member& m);
  // A pool kernel for `name` with `env`, or false when none can serve (the
  // caller starts one cold).
  bool claim_pooled_kernel(const std::string& name, const std::map<std::string, std::string>& env,
                           const principal& who, const start_handler& done);
  // The kernel a sandbox taken from a pool brought along, for the first
  // kernel of its name started in it.
  bool take_reserved_kernel(sandbox_entry& box, const std::string& name,
                            const std::map<std::string, std::string>& env, const principal& who,
                            const start_handler& done);
  std::shared_ptr<sandbox_entry> claim_pooled_sandbox(const sandbox_settings& settings, const principal& who,
                                                      domain_error& err);
  // Hands a claimed kernel to its owner: registry, its new environment.
  void give_claimed(const std::shared_ptr<kernel>& k, sandbox_entry& box,
                    const std::map<std::string, std::string>& env, const principal& who, start_handler done);
  [[nodiscard]] kernel_options options_for(const std::string& id, const std::string& owner,
                                           const kernelspec& spec, const sandbox_entry& box) const;

  boost::asio::io_context& io_;
  const config& cfg_;
  kernelspec_catalog& specs_;
  registry& registry_;
  zmq::context_t zmq_{1};
  std::shared_ptr<output_budget> output_;
  boost::asio::signal_set sigchld_;
  sandbox_manager sandboxes_;
  std::map<std::string, std::shared_ptr<kernel>> kernels_;
  bool draining_ = false;
  // Kernels that came with sandboxes claimed from a pool, by sandbox id.
  std::map<std::string, std::shared_ptr<kernel>> reserved_;
  // Pool members still starting or warming up, by kernel id (a stop ends them).
  std::map<std::string, std::shared_ptr<kernel>> pool_starting_;
  kernel_pool pool_;
  // Free pages go back to the system two seconds after the last kernel ended
  // or the last burst of output drained (one kernel's own freed blocks
  // rarely reach the top of the heap, so glibc would keep them).
  memory_release memory_release_;
};

}  // namespace sandgate::gateway
