// sandgate-shell: a Jupyter kernel for bash.
//
//   sandgate-shell -f <connection_file>
//
// Interrupts: SIGINT to the kernel process, or interrupt_request on the
// control channel, sends SIGINT to the running command's process group.

#include <csignal>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>

#include <xeus/xkernel.hpp>
#include <xeus/xkernel_configuration.hpp>
#include <zmq.hpp>

#include "sandgate_kernels/command_line.hpp"
#include "sandgate_kernels/interrupting_server.hpp"
#include "sandgate_kernels/iopub_journal.hpp"
#include "sandgate_kernels/sigint_forwarder.hpp"
#include "sandgate_kernels/sigint_mask.hpp"
#include "sandgate_kernels/standard_fds.hpp"
#include "shell_interpreter.hpp"

namespace {

int run(const sandgate::kernels::kernel_options& options) {
  const xeus::xconfiguration config = xeus::load_configuration(options.connection_file);
  // What this kernel publishes, kept for a gateway that restarts (if asked for).
  const auto journal = sandgate::kernels::iopub_journal::from_environment();

  auto interpreter = std::make_unique<sandgate::shell_kernel::shell_interpreter>();
  auto& shell = *interpreter;
  sandgate::kernels::set_interrupt_hook([&shell] { shell.interrupt(); });

  xeus::xkernel kernel(config, xeus::get_user_name(), xeus::make_context<zmq::context_t>(),
                       std::move(interpreter), sandgate::kernels::make_interrupting_server);
  const sandgate::kernels::sigint_forwarder forwarder([&shell] { shell.interrupt(); });
  kernel.start();  // serves until shutdown_request
  return EXIT_SUCCESS;
}

}  // namespace

int main(int argc, char* argv[]) {
  sandgate::kernels::ensure_standard_fds();
  // Before any thread exists, so that every thread inherits the mask.
  sandgate::kernels::block_sigint();
  sandgate::kernels::block_stop_signal();
  // A dead bash must be an error on write, not the end of the kernel.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    const auto options = sandgate::kernels::parse_command_line(argc, argv);
    if (options.show_help) {
      std::cout << sandgate::kernels::usage(argv[0]);
      return EXIT_SUCCESS;
    }
    if (options.show_version) {
      std::cout << "sandgate-shell " << SANDGATE_VERSION << '\n';
      return EXIT_SUCCESS;
    }
    if (!options.preload_modules.empty()) {
      std::cerr << "sandgate-shell: --preload is ignored\n";
    }
    return run(options);
  } catch (const std::invalid_argument& error) {
    std::cerr << "sandgate-shell: " << error.what() << '\n' << sandgate::kernels::usage(argv[0]);
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "sandgate-shell: " << error.what() << '\n';
    return EXIT_FAILURE;
  }
}
