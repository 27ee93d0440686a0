#include "sandgate_kernels/kernel_main.hpp"

#include <csignal>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <optional>
#include <stdexcept>

#include <xeus/xkernel.hpp>
#include <xeus/xkernel_configuration.hpp>
#include <zmq.hpp>

#include "sandgate_kernels/iopub_journal.hpp"
#include "sandgate_kernels/sigint_forwarder.hpp"
#include "sandgate_kernels/sigint_mask.hpp"
#include "sandgate_kernels/standard_fds.hpp"
#include "sandgate_kernels/startup_timing.hpp"

namespace sandgate::kernels {
namespace {

int serve(const kernel_options& options, const kernel_program& program) {
  const xeus::xconfiguration config = xeus::load_configuration(options.connection_file);
  // What this kernel publishes, kept for a gateway that restarts (if asked for).
  const auto journal = iopub_journal::from_environment();

  kernel_interpreter made = program.make_interpreter(options);
  set_interrupt_hook(made.interrupt);
  xeus::xkernel kernel(config, xeus::get_user_name(), xeus::make_context<zmq::context_t>(),
                       std::move(made.interpreter), make_interrupting_server);
  std::optional<sigint_forwarder> forwarder;
  if (program.cells == cell_host::child_process) {
    forwarder.emplace(made.interrupt);
  }
  kernel.start();  // serves until shutdown_request
  return EXIT_SUCCESS;
}

}  // namespace

int kernel_main(int argc, char* argv[], const kernel_program& program) {
  startup_mark(program.name.c_str(), "main");
  ensure_standard_fds();
  // Before any thread exists, so that every thread inherits the mask.
  block_sigint();
  if (program.cells == cell_host::child_process) {
    block_stop_signal();
    std::signal(SIGPIPE, SIG_IGN);
  }
  try {
    const auto options = parse_command_line(argc, argv);
    if (options.show_help) {
      std::cout << usage(argv[0]);
      return EXIT_SUCCESS;
    }
    if (options.show_version) {
      std::cout << program.name << ' ' << SANDGATE_VERSION << '\n';
      return EXIT_SUCCESS;
    }
    if (!program.uses_preload && !options.preload_modules.empty()) {
      std::cerr << program.name << ": --preload is ignored\n";
    }
    if (program.check_options) {
      program.check_options(options);  // a bad option fails before the kernel binds
    }
    return serve(options, program);
  } catch (const std::invalid_argument& error) {
    std::cerr << program.name << ": " << error.what() << '\n' << usage(argv[0]);
    return 2;
  } catch (const std::exception& error) {
    std::cerr << program.name << ": " << error.what() << '\n';
    return EXIT_FAILURE;
  }
}

}  // namespace sandgate::kernels
