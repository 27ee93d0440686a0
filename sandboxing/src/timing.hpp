// Per-step timestamps for profiling the setup pipeline: with
// SANDGATE_SANDBOX_TIMING=1 in the environment of the outer process, every
// step of the outer process, the supervisor and a spawned program writes
// "sandgate-sandbox timing <pid> <CLOCK_MONOTONIC ns> <step>" to stderr
// (before the program's stdio is redirected). Off, a mark costs one branch.
#pragma once

namespace sandgate::sandboxing::detail {

// Reads the environment once (call before fork/clone so children inherit the answer).
void timing_init();
// Writes one line when enabled (one write(2); fine between fork and exec of
// this single-threaded program).
void timing_mark(const char* step);

}  // namespace sandgate::sandboxing::detail
