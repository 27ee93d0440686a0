// sandgate-javascript: a Jupyter kernel for JavaScript and TypeScript on Node.
//
//   sandgate-javascript -f <connection_file> [--language javascript|typescript]
//
// Interrupts: SIGINT to the kernel process, or interrupt_request on the
// control channel, sends SIGINT to Node's process group.

#include <cstdlib>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "driver_files.hpp"
#include "javascript_interpreter.hpp"
#include "sandgate_kernels/kernel_main.hpp"

namespace {

namespace js = sandgate::javascript_kernel;
namespace kernels = sandgate::kernels;

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

}  // namespace

int main(int argc, char* argv[]) {
  std::optional<js::driver_files> driver;  // outlives the kernel, whose Node runs it
  return kernels::kernel_main(
      argc, argv,
      {.name = "sandgate-javascript",
       .cells = kernels::cell_host::child_process,
       .check_options = [](const kernels::kernel_options& options) { language_of(options.language); },
       .make_interpreter =
           [&driver](const kernels::kernel_options& options) {
             driver.emplace();
             js::node_options node;
             node.node = environment_or("SANDGATE_JAVASCRIPT_NODE", "node");
             node.driver = driver->driver_path();
             return kernels::with_interrupt(
                 std::make_unique<js::javascript_interpreter>(language_of(options.language), node));
           }});
}
