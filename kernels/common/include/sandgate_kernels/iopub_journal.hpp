// The kernel's iopub journal (format: jupyter_protocol/journal.hpp).
//
// A thread subscribes to the kernel's own iopub socket and appends every
// message to two files in turn, so the gateway can read, after a restart,
// what was published while no gateway listened. Started only when the
// environment names the journal (the gateway does, for each kernel it starts).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include <xeus/xkernel_configuration.hpp>
#include <zmq.hpp>

namespace sandgate::kernels {

class iopub_journal {
 public:
  // Null unless SANDGATE_KERNEL_JOURNAL is set; removes the journal's
  // variables from the environment. Call before any thread exists (and so
  // with SIGINT blocked) and before the kernel binds.
  static std::unique_ptr<iopub_journal> from_environment(const xeus::xconfiguration& config);

  iopub_journal(std::string endpoint, std::string base_path, std::size_t budget_bytes);
  ~iopub_journal();  // stops and joins the thread
  iopub_journal(const iopub_journal&) = delete;
  iopub_journal& operator=(const iopub_journal&) = delete;

 private:
  void run(std::string endpoint);
  void write_record(const std::string& record);
  bool open_file(int which);

  std::string base_path_;
  std::size_t half_budget_;
  zmq::context_t context_{1};
  int fd_ = -1;              // the file being written
  int which_ = 0;            // 0 or 1
  std::size_t written_ = 0;  // bytes in the file being written
  std::thread thread_;
};

}  // namespace sandgate::kernels
