// Making sure fds 0, 1 and 2 exist before anything else opens files.
#pragma once

namespace sandgate::kernels {

// A launcher may start the kernel with stdin/stdout/stderr closed; then the
// next pipe or socket would take fd 0-2 and be clobbered by the dup2 of a
// child's standard streams (or receive stray writes). Opens /dev/null on each
// closed one. Call first thing in main.
void ensure_standard_fds() noexcept;

}  // namespace sandgate::kernels
