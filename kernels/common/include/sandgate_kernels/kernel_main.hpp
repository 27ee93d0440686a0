// What every Sandgate kernel's main does: one function, the kernel's own
// parts passed in.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <xeus/xinterpreter.hpp>

#include "sandgate_kernels/command_line.hpp"
#include "sandgate_kernels/interrupting_server.hpp"

namespace sandgate::kernels {

// Where a kernel's cells run, which decides how SIGINT reaches them.
enum class cell_host {
  // On the kernel's main thread (sandgate-python): SIGINT stays blocked
  // except inside the interpreter's sigint_window around a cell.
  kernel_process,
  // In a child process (bash, Node): a sigint_forwarder thread takes SIGINT
  // and calls the interrupt; SIGPIPE is ignored, so that a dead child is an
  // error on write, not the end of the kernel.
  child_process,
};

// An interpreter and what an interrupt (interrupt_request, or SIGINT to a
// child_process kernel) does to it: thread-safe and quick.
struct kernel_interpreter {
  std::unique_ptr<xeus::xinterpreter> interpreter;
  interrupt_hook interrupt;
};

// For an interpreter with an `interrupt()` member that is thread-safe.
template <class Interpreter>
kernel_interpreter with_interrupt(std::unique_ptr<Interpreter> interpreter) {
  Interpreter* const raw = interpreter.get();
  return {std::move(interpreter), [raw] { raw->interrupt(); }};
}

struct kernel_program {
  std::string name;  // "sandgate-shell": in --version and in error messages
  cell_host cells = cell_host::child_process;
  bool uses_preload = false;  // otherwise --preload is ignored, with a warning
  // Checks the options before the kernel binds (throws
  // std::invalid_argument, a usage error); may be empty.
  std::function<void(const kernel_options&)> check_options;
  // Makes the interpreter once the connection file is read and the iopub
  // journal (if the gateway asked for one) is open, before the kernel binds
  // and before any thread exists.
  std::function<kernel_interpreter(const kernel_options&)> make_interpreter;
};

// A kernel's main: standard fds, SIGINT blocked before any thread exists,
// the command line (--help, --version), the connection file, the iopub
// journal, the xeus kernel on the interrupting server, then serves until
// shutdown_request. Returns main's exit status: 0, 2 for a usage error (the
// usage follows the message on stderr), 1 for any other failure (named on
// stderr).
int kernel_main(int argc, char* argv[], const kernel_program& program);

}  // namespace sandgate::kernels
