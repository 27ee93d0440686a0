// sandgate-python: a Jupyter kernel for Python on libxeus-python.
//
//   sandgate-python -f <connection_file> [--preload numpy,pandas,matplotlib]
//
// Interrupts: SIGINT to the process, or interrupt_request on the control
// channel, raises KeyboardInterrupt in the running cell; the session survives.

#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>

#include <xeus/xkernel.hpp>
#include <xeus/xkernel_configuration.hpp>
#include <zmq.hpp>

#include "deferred_imports.hpp"
#include "embedded_python.hpp"
#include "python_interpreter.hpp"
#include "sandgate_kernels/command_line.hpp"
#include "sandgate_kernels/interrupting_server.hpp"
#include "sandgate_kernels/iopub_journal.hpp"
#include "sandgate_kernels/sigint_mask.hpp"
#include "sandgate_kernels/standard_fds.hpp"
#include "sandgate_kernels/startup_timing.hpp"

namespace {

int run(const sandgate::kernels::kernel_options& options, const char* const* argv) {
  const xeus::xconfiguration config = xeus::load_configuration(options.connection_file);
  // What this kernel publishes, kept for a gateway that restarts (if asked for).
  const auto journal = sandgate::kernels::iopub_journal::from_environment();

  // CPython first: the interpreter and the kernel below use it and must be
  // destroyed before it (reverse declaration order).
  // sys.argv is just the program: IPython's app would parse the kernel's own
  // options and warn about them.
  const sandgate::python_kernel::embedded_python python(SANDGATE_PYTHON_EXECUTABLE, 1, argv);
  sandgate::kernels::startup_mark("sandgate-python", "python initialized");
  // Before xeus-python imports IPython.
  sandgate::python_kernel::deferred_imports deferred;

  auto interpreter = std::make_unique<sandgate::python_kernel::python_interpreter>(options.preload_modules,
                                                                                   std::move(deferred));
  auto* const raw_interpreter = interpreter.get();
  sandgate::kernels::set_interrupt_hook([raw_interpreter] { raw_interpreter->interrupt(); });

  xeus::xkernel kernel(config, xeus::get_user_name(), xeus::make_context<zmq::context_t>(),
                       std::move(interpreter), sandgate::kernels::make_interrupting_server);
  // Serves until shutdown_request; the shell loop runs cells on this thread.
  kernel.start();
  return EXIT_SUCCESS;
}

}  // namespace

int main(int argc, char* argv[]) {
  sandgate::kernels::startup_mark("sandgate-python", "main");
  sandgate::kernels::ensure_standard_fds();
  // Before any thread exists, so every xeus thread inherits the mask.
  sandgate::kernels::block_sigint();
  // xeus-python imports debugpy, which warns on stderr about frozen modules.
  setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1", 0);
  try {
    const auto options = sandgate::kernels::parse_command_line(argc, argv);
    if (options.show_help) {
      std::cout << sandgate::kernels::usage(argv[0]);
      return EXIT_SUCCESS;
    }
    if (options.show_version) {
      std::cout << "sandgate-python " << SANDGATE_VERSION << '\n';
      return EXIT_SUCCESS;
    }
    return run(options, argv);
  } catch (const std::invalid_argument& error) {
    std::cerr << "sandgate-python: " << error.what() << '\n' << sandgate::kernels::usage(argv[0]);
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "sandgate-python: " << error.what() << '\n';
    return EXIT_FAILURE;
  }
}
