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
  int concurrent_executes = 200;         // per kernel
  int concurrent_executes_total = 6400;  // at most, all kernels together
  int settle_s = 3;                      // wait before the after-stream RSS
  int execute_timeout_s = 60;            // longest wait for one execute's reply and idle
  int creates = 20;                      // create -> first execute_result, each kernel ended before the next
  int pool_depth = 4;                    // the server's warm pool size, for pool hits
  int pool_fill_timeout_s = 300;         // longest wait for the pool to be full again
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
// Create (target::create_kernel) -> first execute_result of `1` over the
// fresh connection, `p.creates` times; each kernel ends before the next.
nlohmann::json measure_create_to_result(target& t, const plan& p);
// The same from the server's warm pool: before each create, waits until the
// pool holds `p.pool_depth` ready kernels, so that every create is a hit.
nlohmann::json measure_pool_hits(target& t, const plan& p);
// The floor's pool hit: a kernel started and connected beforehand (not
// timed), then its first execute -> execute_result.
nlohmann::json measure_prestarted(target& t, const plan& p);

}  // namespace sandgate::bench
