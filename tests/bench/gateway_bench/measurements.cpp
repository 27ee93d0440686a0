#include "measurements.hpp"

#include "conversation.hpp"
#include "process_stats.hpp"
#include "stats.hpp"

#include <unistd.h>

#include <algorithm>
#include <exception>
#include <iostream>
#include <latch>
#include <mutex>
#include <thread>

namespace sandgate::bench {
namespace {

constexpr auto stream_timeout = std::chrono::seconds(600);

struct server_clock {
  pid_t pid;
  std::int64_t cpu_us = read_cpu_us(pid);
  std::int64_t sched_ns = read_sched_ns(pid);

  // CPU µs per item since construction (stat ticks, and schedstat).
  void report(nlohmann::json& out, const char* key, double items) const {
    if (pid <= 0) return;
    const auto cpu = read_cpu_us(pid) - cpu_us;
    const auto sched = read_sched_ns(pid) - sched_ns;
    out[key] = static_cast<double>(cpu) / items;
    if (sched_ns >= 0) out[std::string(key) + "_schedstat"] = static_cast<double>(sched) / 1000.0 / items;
  }
};

void note(const std::string& what) {
  std::cerr << "gateway_bench: " << what << std::endl;
}

// Runs fn(i) on n threads released together; rethrows the first failure.
template <typename F>
void in_parallel(int n, F fn) {
  std::latch ready(n);
  std::exception_ptr failure;
  std::mutex failure_mutex;
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      ready.arrive_and_wait();
      try {
        fn(i);
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    });
  for (auto& t : threads)
    t.join();
  if (failure) std::rethrow_exception(failure);
}

// Runs `1` on a fresh kernel; ms from `started` to its execute_result.
double first_result_ms(kernel_session& k, bench_clock::time_point started, const plan& p) {
  const auto r = execute(k.connection(), "1", std::chrono::seconds(p.execute_timeout_s));
  if (r.result_ms < 0) throw bench_error("no execute_result for `1`");
  return ms_between(started, r.sent_at) + r.result_ms;
}

nlohmann::json first_result_summary(const std::vector<double>& ms, const std::vector<double>& created_ms,
                                    const std::vector<double>& connected_ms) {
  return {{"n", ms.size()},
          {"all_ms", ms},
          {"p50_ms", percentile(ms, 50)},
          {"p99_ms", percentile(ms, 99)},
          {"created_p50_ms", percentile(created_ms, 50)},
          {"connected_p50_ms", percentile(connected_ms, 50)}};
}

// Polls the server's warm pool until it holds `depth` ready kernels.
// Returns the ms waited.
double wait_for_pool(target& t, int depth, std::chrono::seconds timeout) {
  const auto started = bench_clock::now();
  const auto deadline = started + timeout;
  for (;;) {
    const auto ready = t.pool_metric("sandgate_pool_ready");
    if (!ready) throw bench_error("the server shows no sandgate_pool_ready gauge for the kernel");
    if (*ready >= depth) return ms_between(started, bench_clock::now());
    if (bench_clock::now() > deadline)
      throw bench_error("the warm pool held " + std::to_string(*ready) + " ready kernels, not " +
                        std::to_string(depth) + ", after " + std::to_string(timeout.count()) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

nlohmann::json measure_starts(target& t, const plan& p, std::unique_ptr<kernel_session>& kept) {
  std::vector<double> ms;
  for (int i = 0; i < p.starts; ++i) {
    kept.reset();
    kept = t.start_kernel();
    ms.push_back(kept->start_ms);
  }
  note("kernel start p50 " + std::to_string(percentile(ms, 50)) + " ms");
  return {{"all_ms", ms}, {"p50_ms", percentile(ms, 50)}, {"max_ms", percentile(ms, 100)}};
}

nlohmann::json measure_executes(target& t, kernel_session& k, const plan& p) {
  auto& c = k.connection();
  for (int i = 0; i < p.warmup; ++i)
    (void)execute(c, "1", std::chrono::seconds(p.execute_timeout_s));
  std::vector<double> ms;
  ms.reserve(static_cast<std::size_t>(p.executes));
  const server_clock server{t.server_pid()};
  const server_clock client{::getpid()};  // this client: on the floor, a bare ZeroMQ client's own cost
  const auto started = bench_clock::now();
  for (int i = 0; i < p.executes; ++i)
    ms.push_back(execute(c, "1", std::chrono::seconds(p.execute_timeout_s)).done_ms);
  const double wall_s = ms_between(started, bench_clock::now()) / 1000.0;
  nlohmann::json out = {{"n", p.executes},
                        {"p50_ms", percentile(ms, 50)},
                        {"p99_ms", percentile(ms, 99)},
                        {"per_s", p.executes / wall_s}};
  server.report(out, "server_cpu_us_per_exec", p.executes);
  client.report(out, "client_cpu_us_per_exec", p.executes);
  note("execute p50 " + std::to_string(percentile(ms, 50)) + " ms");
  return out;
}

nlohmann::json measure_png(kernel_session& k, const plan& p) {
  auto& c = k.connection();
  (void)execute(c,
                "import base64, os\n"
                "_png = base64.b64encode(b'\\x89PNG\\r\\n\\x1a\\n' + os.urandom((1 << 20) - 8)).decode()\n"
                "from IPython.display import display as _display\n",
                std::chrono::seconds(p.execute_timeout_s));
  std::vector<double> display_ms, done_ms;
  std::size_t bytes = 0;
  for (int i = 0; i < p.png_repeats; ++i) {
    const auto r =
        execute(c, "_display({'image/png': _png}, raw=True)", std::chrono::seconds(p.execute_timeout_s));
    if (r.first_display_ms < 0) throw bench_error("no display_data for the PNG");
    display_ms.push_back(r.first_display_ms);
    done_ms.push_back(r.done_ms);
    bytes = r.display_bytes;
  }
  note("png display p50 " + std::to_string(percentile(display_ms, 50)) + " ms");
  return {{"display_ms_p50", percentile(display_ms, 50)},
          {"done_ms_p50", percentile(done_ms, 50)},
          {"content_bytes", bytes}};
}

nlohmann::json measure_stream(target& t, kernel_session& k, const plan& p) {
  auto& c = k.connection();
  const std::size_t writes = static_cast<std::size_t>(p.stream_mib) * 16;  // 64 KiB each
  const std::string code = "import sys\n_chunk = 'x' * 65535 + '\\n'\nfor _ in range(" +
                           std::to_string(writes) + "):\n    sys.stdout.write(_chunk)\nsys.stdout.flush()\n";
  const pid_t pid = t.server_pid();
  nlohmann::json out;
  if (pid > 0) out["rss_before_kib"] = read_memory(pid).rss;
  const server_clock server{pid};
  const auto r = execute(c, code, stream_timeout, std::chrono::seconds(10));
  const double payload = static_cast<double>(writes) * 65536.0;
  // iopub is lossy (a PUB socket drops at its high-water mark): say so
  // rather than hang or fail.
  const bool complete = !r.idle_lost && static_cast<double>(r.stream_bytes) >= payload;
  const double s_taken = (r.idle_lost ? r.last_iopub_ms : r.done_ms) / 1000.0;
  out["payload_bytes"] = payload;
  out["received_bytes"] = r.stream_bytes;
  out["complete"] = complete;
  out["idle_lost"] = r.idle_lost;
  out["messages"] = r.iopub_messages;
  out["s"] = s_taken;
  out["mb_s"] = std::min(payload, static_cast<double>(r.stream_bytes)) / 1e6 / s_taken;
  if (!complete) note("stream incomplete: " + std::to_string(r.stream_bytes) + " content bytes received");
  server.report(out, "server_cpu_us_per_mib", p.stream_mib);
  if (pid > 0) {
    out["rss_peak_kib"] = read_memory(pid).peak;
    std::this_thread::sleep_for(std::chrono::seconds(p.settle_s));
    out["rss_after_kib"] = read_memory(pid).rss;
  }
  note("stream " + std::to_string(out["mb_s"].get<double>()) + " MB/s");
  return out;
}

nlohmann::json measure_concurrent(target& t, int n, const plan& p) {
  std::vector<std::unique_ptr<kernel_session>> kernels(static_cast<std::size_t>(n));
  const auto started = bench_clock::now();
  in_parallel(n, [&](int i) { kernels[static_cast<std::size_t>(i)] = t.start_kernel(); });
  const double start_wall_ms = ms_between(started, bench_clock::now());
  std::vector<double> start_ms;
  for (const auto& k : kernels)
    start_ms.push_back(k->start_ms);

  in_parallel(n, [&](int i) {
    for (int j = 0; j < 20; ++j)
      (void)execute(kernels[static_cast<std::size_t>(i)]->connection(), "1",
                    std::chrono::seconds(p.execute_timeout_s));
  });
  // Past a few dozen kernels, fewer executes each keep the run's length in bounds.
  const int executes = std::min(p.concurrent_executes, std::max(1, p.concurrent_executes_total / n));
  std::vector<std::vector<double>> per_kernel(static_cast<std::size_t>(n));
  const server_clock server{t.server_pid()};
  const auto exec_started = bench_clock::now();
  in_parallel(n, [&](int i) {
    auto& mine = per_kernel[static_cast<std::size_t>(i)];
    auto& c = kernels[static_cast<std::size_t>(i)]->connection();
    for (int j = 0; j < executes; ++j)
      mine.push_back(execute(c, "1", std::chrono::seconds(p.execute_timeout_s)).done_ms);
  });
  const double exec_wall_s = ms_between(exec_started, bench_clock::now()) / 1000.0;
  std::vector<double> ms;
  for (const auto& v : per_kernel)
    ms.insert(ms.end(), v.begin(), v.end());
  nlohmann::json out = {{"kernels", n},
                        {"executes_per_kernel", executes},
                        {"start_wall_ms", start_wall_ms},
                        {"start_p50_ms", percentile(start_ms, 50)},
                        {"start_max_ms", percentile(start_ms, 100)},
                        {"exec_p50_ms", percentile(ms, 50)},
                        {"exec_p99_ms", percentile(ms, 99)},
                        {"exec_per_s", static_cast<double>(ms.size()) / exec_wall_s}};
  server.report(out, "server_cpu_us_per_exec", static_cast<double>(ms.size()));
  if (t.server_pid() > 0) out["rss_kib"] = read_memory(t.server_pid()).rss;
  note(std::to_string(n) + " kernels: start wall " + std::to_string(start_wall_ms) + " ms, execute p50 " +
       std::to_string(percentile(ms, 50)) + " ms");
  in_parallel(n, [&](int i) { kernels[static_cast<std::size_t>(i)].reset(); });
  return out;
}

// One create through to its first result; the kernel is deleted on return.
static void time_one_create(target& t, const plan& p, bench_clock::time_point started,
                            std::vector<double>& ms, std::vector<double>& created_ms,
                            std::vector<double>& connected_ms) {
  auto k = t.create_kernel();
  ms.push_back(first_result_ms(*k, started, p));
  created_ms.push_back(k->created_ms);
  connected_ms.push_back(k->connected_ms);
}

nlohmann::json measure_create_to_result(target& t, const plan& p) {
  std::vector<double> ms, created_ms, connected_ms;
  for (int i = 0; i < p.creates; ++i)
    time_one_create(t, p, bench_clock::now(), ms, created_ms, connected_ms);
  note("create -> first execute_result p50 " + std::to_string(percentile(ms, 50)) + " ms");
  return first_result_summary(ms, created_ms, connected_ms);
}

nlohmann::json measure_pool_hits(target& t, const plan& p) {
  const std::chrono::seconds timeout(p.pool_fill_timeout_s);
  const double fill_ms = wait_for_pool(t, p.pool_depth, timeout);
  const auto misses_before = t.pool_metric("sandgate_pool_misses_total");
  std::vector<double> ms, created_ms, connected_ms, refill_ms;
  for (int i = 0; i < p.creates; ++i) {
    const auto started = bench_clock::now();
    time_one_create(t, p, started, ms, created_ms, connected_ms);
    (void)wait_for_pool(t, p.pool_depth, timeout);
    refill_ms.push_back(ms_between(started, bench_clock::now()));  // claim -> full again
  }
  note("pool hit -> first execute_result p50 " + std::to_string(percentile(ms, 50)) + " ms");
  auto out = first_result_summary(ms, created_ms, connected_ms);
  out["pool_depth"] = p.pool_depth;
  out["fill_ms"] = fill_ms;
  out["refill_p50_ms"] = percentile(refill_ms, 50);
  // A create that found the pool empty started cold: it should not happen
  // here, and is counted rather than hidden.
  const auto misses_after = t.pool_metric("sandgate_pool_misses_total");
  if (misses_before && misses_after) out["misses"] = *misses_after - *misses_before;
  return out;
}

nlohmann::json measure_prestarted(target& t, const plan& p) {
  std::vector<double> ms, zeros;
  for (int i = 0; i < p.creates; ++i) {
    auto k = t.start_kernel();
    ms.push_back(first_result_ms(*k, bench_clock::now(), p));
    zeros.push_back(0);
  }
  note("started kernel, first execute -> execute_result p50 " + std::to_string(percentile(ms, 50)) + " ms");
  return first_result_summary(ms, zeros, zeros);
}

}  // namespace sandgate::bench
