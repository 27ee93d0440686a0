// The xeus-python interpreter with a working interrupt.
#pragma once

#include <string>
#include <vector>

#include <xeus-python/xinterpreter.hpp>

#include "deferred_imports.hpp"

namespace sandgate::python_kernel {

// Runs cells like xpython, plus:
//  - SIGINT is accepted only on the main thread while a cell runs, where
//    Python's handler turns it into KeyboardInterrupt; an idle SIGINT is
//    dropped and never leaks into the next cell;
//  - interrupt() (from interrupt_request on the control thread) does the same
//    as a SIGINT sent to the process; either is sent again every 100 ms until
//    Python's handler has acted on it (CPython defers a SIGINT that lands
//    just before a blocking call);
//  - at configure time, the imports deferred at start are restored (see
//    deferred_imports.hpp), the start-up script runs and the preload modules
//    are imported.
// Must be constructed on the thread that will run the shell loop (main), once
// per process.
class python_interpreter final : public xpyt::interpreter {
 public:
  python_interpreter(std::vector<std::string> preload_modules, deferred_imports deferred);

  // Thread-safe; interrupts the running cell, no-op while idle.
  void interrupt() noexcept;

 private:
  void configure_impl() override;
  nl::json execute_request_impl(int execution_counter, const std::string& code, bool silent,
                                bool store_history, nl::json user_expressions, bool allow_stdin) override;
  nl::json kernel_info_request_impl() override;
  void shutdown_request_impl() override;
  // Routes SIGINT through a handler that resends it until Python acted.
  void watch_sigint();

  std::vector<std::string> preload_modules_;  // imported during configure
  deferred_imports deferred_;                 // restored during configure
  std::string python_version_;                // for kernel_info
  // The cell thread, whether a cell runs, and the interrupts acted on are
  // process-wide (python_interpreter.cpp): the SIGINT handler and its
  // watchdog thread read them, and may outlive this object at exit.
};

}  // namespace sandgate::python_kernel
