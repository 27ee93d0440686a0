#pragma once
// The measurements, each on a target, each returning its results as JSON.

#include "targets.hpp"

#include <nlohmann/json.hpp>

#include <vector>

namespace sandgate::bench {

struct plan {
  int starts = 5;       // sequential kernel starts
  int warmup = 200;     // executes before timing
  int executes = 5000;  // timed executes of `1` on one kernel
  int stream_mib = 50;  // size of the stdout stream
  int png_repeats = 5;  // 1 MiB PNG display_data relays
  std::vector<int> concurrency = {8, 32};
  int concurrent_executes = 200;  // per kernel
  int settle_s = 3;               // wait before the after-stream RSS
  int execute_timeout_s = 60;     // longest wait for one execute's reply and idle
};

// Starts `p.starts` kernels one after another; keeps the last one.
nlohmann::json measure_starts(target& t, const plan& p, std::unique_ptr<kernel_session>& kept);
// execute `1` round trips, executes/s, server CPU per execute.
nlohmann::json measure_executes(target& t, kernel_session& k, const plan& p);
// A 1 MiB PNG as display_data.
nlohmann::json measure_png(kernel_session& k, const plan& p);
// A `p.stream_mib` MiB stdout stream in 64 KiB writes; server RSS after.
nlohmann::json measure_stream(target& t, kernel_session& k, const plan& p);
// `n` kernels started at once, then executing at once.
nlohmann::json measure_concurrent(target& t, int n, const plan& p);

}  // namespace sandgate::bench
