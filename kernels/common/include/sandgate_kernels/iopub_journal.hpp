// The kernel's iopub journal (format: jupyter_protocol/journal.hpp).
//
// Every message the kernel's iopub socket sends is appended, before the
// socket has it, to two files in turn (sandgate_kernels/iopub_sockets.hpp), so
// the gateway can read, after a restart, what was published while no gateway
// listened: from the kernel's first status on, nothing missing. Kept only
// when the environment names the journal (the gateway does, for each kernel
// it starts).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <jupyter_protocol/journal.hpp>

#include "sandgate_kernels/iopub_sockets.hpp"

namespace sandgate::kernels {

class iopub_journal final : public iopub_tap {
 public:
  // Null unless SANDGATE_KERNEL_JOURNAL is set; removes the journal's
  // variables from the environment. Call before any thread exists (and so
  // with SIGINT blocked) and before the kernel binds.
  static std::unique_ptr<iopub_journal> from_environment();

  // Journals what the kernel's iopub socket sends, into `<base_path>.0` and
  // `.1`, together at most about `budget_bytes`.
  iopub_journal(std::string base_path, std::size_t budget_bytes);
  ~iopub_journal();  // stops the tap; after the kernel's publisher has stopped
  iopub_journal(const iopub_journal&) = delete;
  iopub_journal& operator=(const iopub_journal&) = delete;

  // On the publishing thread: one frame, written with its message's last.
  void on_frame(zmq_msg_t& frame, bool more) override;

 private:
  void write_record(std::string_view record);
  bool open_file(int which);

  std::string base_path_;
  std::size_t half_budget_;
  protocol::journal_record_builder builder_;
  std::uint64_t seq_ = 0;
  int fd_ = -1;              // the file being written
  int which_ = 0;            // 0 or 1
  std::size_t written_ = 0;  // bytes in the file being written
};

}  // namespace sandgate::kernels
