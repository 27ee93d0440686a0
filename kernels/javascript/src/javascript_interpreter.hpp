// The xeus interpreter of sandgate-javascript: cells run in one persistent Node.
#pragma once

#include <string>

#include <xeus/xinterpreter.hpp>

#include "node_process.hpp"
#include "sandgate_kernels/child_slot.hpp"

namespace sandgate::javascript_kernel {

enum class language { javascript, typescript };

// - execute: the cell goes to the Node driver, which rewrites it so that its
//   top-level declarations become globals (state persists, declaring a name
//   again is allowed) and runs it; console output streams live, display()
//   sends display_data, the last expression's value is the execute_result,
//   an uncaught error or rejection is the error reply (ename the error's
//   name, traceback its stack). TypeScript cells are type-checked first.
// - interrupt(): SIGINT to Node's process group; the cell ends with an
//   `Interrupted` error and state is kept (if Node does not stop within
//   node_process::interrupt_grace, it is killed and the next cell gets a
//   fresh one).
// - complete / inspect / is_complete: answered by the driver.
// If Node exits (a cell ran process.exit), the cell gets a `NodeExited`
// error and the next cell gets a fresh Node.
class javascript_interpreter final : public xeus::xinterpreter {
 public:
  javascript_interpreter(language lang, node_options options);
  ~javascript_interpreter() override;

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

  node_process& node();  // the running Node, started again if it ended
  // Sends a request and waits for its answer frame (null if Node ended);
  // output meanwhile is published as usual.
  nl::json ask(nl::json command, const std::string& answer_type);

  language language_;
  node_options options_;
  std::string node_version_;
  long next_id_ = 0;
  kernels::child_slot<node_process> node_;
};

}  // namespace sandgate::javascript_kernel
