// The xeus interpreter of sandgate-shell: cells run in one persistent bash.
#pragma once

#include <string>

#include <xeus/xinterpreter.hpp>

#include "bash_process.hpp"
#include "sandgate_kernels/child_slot.hpp"

namespace sandgate::shell_kernel {

// - execute: the cell is written to a private file and run as one command
//   line (`eval "$(<file)" </dev/null`) in the persistent bash, so cwd,
//   variables and functions persist; stdout/stderr stream live; a non-zero
//   final status is an error reply (ename "ExitStatus", evalue the number).
// - interrupt(): SIGINT to bash's process group; the shell survives and the
//   cell ends with status 130.
// - complete: compgen in the same shell (commands, files, variables).
// - is_complete: bash -n.
// If bash exits (a cell ran `exit`), the next cell gets a fresh one.
class shell_interpreter final : public xeus::xinterpreter {
 public:
  shell_interpreter();
  ~shell_interpreter() override;

  // Thread-safe (control thread, signal thread); no-op while idle.
  void interrupt() noexcept;

 private:
  void configure_impl() override;
  nl::json execute_request_impl(int execution_counter, const std::string& code, bool silent,
                                bool store_history, nl::json user_expressions, bool allow_stdin) override;
  nl::json complete_request_impl(const std::string& code, int cursor_pos) override;
  nl::json inspect_request_impl(const std::string& code, int cursor_pos, int detail_level) override;
  nl::json is_complete_request_impl(const std::string& code) override;
  nl::json kernel_info_request_impl() override;
  void shutdown_request_impl() override;

  bash_process& shell();                                 // the running bash, started again if it exited
  std::string capture(const std::string& command_line);  // stdout of a helper line

  std::string bash_path_;
  std::string cell_dir_;   // private directory holding the cell file
  std::string cell_file_;  // cell_dir_/cell.sh
  std::string bash_version_;
  kernels::child_slot<bash_process> bash_;
};

}  // namespace sandgate::shell_kernel
