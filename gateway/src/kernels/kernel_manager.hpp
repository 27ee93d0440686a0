#pragma once
// The kernels of this gateway: admission (starting kernels count), start,
// lookup by id and owner, shutdown, and reaping of host child processes.

#include "kernel.hpp"

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

// Outcome of a request, in HTTP terms so the API can answer it directly.
struct api_error {
  unsigned status = 500;
  std::string reason;
  std::string message;
};

class kernel_manager {
 public:
  using start_handler = std::function<void(std::shared_ptr<kernel>, std::optional<api_error>)>;

  // `exe_dir`: where sandgate lives; sandgate-sandbox and share/ are found from it.
  kernel_manager(boost::asio::io_context& io, const config& cfg, kernelspec_catalog& specs,
                 std::filesystem::path exe_dir);
  ~kernel_manager();

  void start_kernel(const std::string& name, std::map<std::string, std::string> env, const std::string& owner,
                    start_handler done);
  [[nodiscard]] std::shared_ptr<kernel> find(const std::string& id) const;
  [[nodiscard]] std::vector<std::shared_ptr<kernel>> list() const;
  void shutdown_kernel(const std::string& id, std::function<void()> done);
  void shutdown_all(std::function<void()> done);

  [[nodiscard]] std::string default_kernel_name() const;
  [[nodiscard]] kernelspec_catalog& specs() noexcept { return specs_; }

 private:
  std::shared_ptr<sandbox> make_sandbox(const std::string& kernel_id, const kernelspec& spec);
  unsigned claim_slot();
  std::filesystem::path sandbox_policy(const std::string& kernel_id, const kernelspec& spec);
  // Forgets a kernel and frees its sandbox's slot and files.
  void release(const std::string& kernel_id, bool keep_log = false);
  void watch_children();

  boost::asio::io_context& io_;
  const config& cfg_;
  kernelspec_catalog& specs_;
  zmq::context_t zmq_{1};
  boost::asio::signal_set sigchld_;
  std::map<std::string, std::shared_ptr<kernel>> kernels_;
  std::filesystem::path exe_dir_;
  std::filesystem::path policy_file_;
  std::map<std::string, unsigned> slots_;  // kernel id -> host id slot of its sandbox
  std::set<unsigned> used_slots_;
};

}  // namespace sandgate::gateway
