// sandgate-python: a Jupyter kernel for Python on libxeus-python.
//
//   sandgate-python -f <connection_file> [--preload numpy,pandas,matplotlib]
//
// Interrupts: SIGINT to the process, or interrupt_request on the control
// channel, raises KeyboardInterrupt in the running cell; the session survives.

#include <cstdlib>
#include <memory>
#include <optional>

#include "deferred_imports.hpp"
#include "embedded_python.hpp"
#include "python_interpreter.hpp"
#include "sandgate_kernels/kernel_main.hpp"
#include "sandgate_kernels/startup_timing.hpp"

int main(int argc, char* argv[]) {
  namespace kernels = sandgate::kernels;
  namespace py = sandgate::python_kernel;
  // xeus-python imports debugpy, which warns on stderr about frozen modules.
  setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1", 0);
  // CPython outlives the kernel and its interpreter, which use it.
  std::optional<py::embedded_python> python;
  return kernels::kernel_main(argc, argv,
                              {.name = "sandgate-python",
                               .cells = kernels::cell_host::kernel_process,
                               .uses_preload = true,
                               .make_interpreter = [&python, argv](const kernels::kernel_options& options) {
                                 // sys.argv is just the program: IPython's app would parse the
                                 // kernel's own options and warn about them.
                                 python.emplace(SANDGATE_PYTHON_EXECUTABLE, 1, argv);
                                 kernels::startup_mark("sandgate-python", "python initialized");
                                 // Before xeus-python imports IPython.
                                 py::deferred_imports deferred;
                                 return kernels::with_interrupt(std::make_unique<py::python_interpreter>(
                                     options.preload_modules, std::move(deferred)));
                               }});
}
