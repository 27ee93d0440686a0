// sandgate-shell: a Jupyter kernel for bash.
//
//   sandgate-shell -f <connection_file>
//
// Interrupts: SIGINT to the kernel process, or interrupt_request on the
// control channel, sends SIGINT to the running command's process group.

#include <memory>

#include "sandgate_kernels/kernel_main.hpp"
#include "shell_interpreter.hpp"

int main(int argc, char* argv[]) {
  namespace kernels = sandgate::kernels;
  return kernels::kernel_main(
      argc, argv,
      {.name = "sandgate-shell",
       .cells = kernels::cell_host::child_process,
       .make_interpreter = [](const kernels::kernel_options&) {
         return kernels::with_interrupt(std::make_unique<sandgate::shell_kernel::shell_interpreter>());
       }});
}
