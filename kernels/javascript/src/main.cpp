// sandgate-javascript: a Jupyter kernel for JavaScript and TypeScript on Node.
//
//   sandgate-javascript -f <connection_file> [--language javascript|typescript]
//
// Interrupts: SIGINT to the kernel process, or interrupt_request on the
// control channel, sends SIGINT to Node's process group.

#include <csignal>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <stdexcept>

#include <xeus/xkernel.hpp>
#include <xeus/xkernel_configuration.hpp>
#include <zmq.hpp>

#include "driver_files.hpp"
#include "javascript_interpreter.hpp"
#include "sandgate_kernels/command_line.hpp"
#include "sandgate_kernels/interrupting_server.hpp"
#include "sandgate_kernels/iopub_journal.hpp"
#include "sandgate_kernels/sigint_forwarder.hpp"
#include "sandgate_kernels/sigint_mask.hpp"
#include "sandgate_kernels/standard_fds.hpp"

namespace {

namespace js = sandgate::javascript_kernel;

std::string environment_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

js::language language_of(const std::string& name) {
  if (name.empty() || name == "javascript") {
    return js::language::javascript;
  }
  if (name == "typescript") {
    return js::language::typescript;
  }
  throw std::invalid_argument("unknown language: " + name + " (javascript or typescript)");
}

int run(const sandgate::kernels::kernel_options& options) {
  const xeus::xconfiguration config = xeus::load_configuration(options.connection_file);
  // What this kernel publishes, kept for a gateway that restarts (if asked for).
  const auto journal = sandgate::kernels::iopub_journal::from_environment();

  const js::driver_files driver;
  js::node_options node;
  node.node = environment_or("SANDGATE_JAVASCRIPT_NODE", "node");
  node.driver = driver.driver_path();
  auto interpreter = std::make_unique<js::javascript_interpreter>(language_of(options.language), node);
  auto& javascript = *interpreter;
  sandgate::kernels::set_interrupt_hook([&javascript] { javascript.interrupt(); });

  xeus::xkernel kernel(config, xeus::get_user_name(), xeus::make_context<zmq::context_t>(),
                       std::move(interpreter), sandgate::kernels::make_interrupting_server);
  const sandgate::kernels::sigint_forwarder forwarder([&javascript] { javascript.interrupt(); });
  kernel.start();  // serves until shutdown_request
  return EXIT_SUCCESS;
}

}  // namespace

int main(int argc, char* argv[]) {
  sandgate::kernels::ensure_standard_fds();
  // Before any thread exists, so that every thread inherits the mask.
  sandgate::kernels::block_sigint();
  sandgate::kernels::block_stop_signal();
  // A dead Node must be an error on write, not the end of the kernel.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    const auto options = sandgate::kernels::parse_command_line(argc, argv);
    if (options.show_help) {
      std::cout << sandgate::kernels::usage(argv[0]);
      return EXIT_SUCCESS;
    }
    if (options.show_version) {
      std::cout << "sandgate-javascript " << SANDGATE_VERSION << '\n';
      return EXIT_SUCCESS;
    }
    if (!options.preload_modules.empty()) {
      std::cerr << "sandgate-javascript: --preload is ignored\n";
    }
    language_of(options.language);  // a bad name fails before the kernel binds
    return run(options);
  } catch (const std::invalid_argument& error) {
    std::cerr << "sandgate-javascript: " << error.what() << '\n' << sandgate::kernels::usage(argv[0]);
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "sandgate-javascript: " << error.what() << '\n';
    return EXIT_FAILURE;
  }
}
