// Start-up marks of a kernel, for measuring where a cold start goes.
#pragma once

namespace sandgate::kernels {

// With SANDGATE_KERNEL_TIMING set (and not "0") in the environment, each
// mark writes one line to stderr:
//   "<program> timing <pid> <CLOCK_MONOTONIC ns> <step>"
// (the format of sandgate-sandbox's SANDGATE_SANDBOX_TIMING marks, so one
// reader takes both). Otherwise marks cost one branch. Reads the variable on
// the first call; async-signal-unsafe, call from ordinary code only.
void startup_mark(const char* program, const char* step) noexcept;

}  // namespace sandgate::kernels
