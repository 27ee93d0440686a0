#pragma once
// A server process's memory and CPU time, read from /proc.

#include <sys/types.h>

#include <cstdint>

namespace sandgate::bench {

struct memory_kib {
  std::int64_t rss = -1;   // VmRSS
  std::int64_t peak = -1;  // VmHWM
};

// From /proc/<pid>/status; -1 fields when unreadable.
[[nodiscard]] memory_kib read_memory(pid_t pid);

// utime + stime from /proc/<pid>/stat (all threads), in microseconds; the
// resolution is one clock tick (usually 10 ms). -1 when unreadable.
[[nodiscard]] std::int64_t read_cpu_us(pid_t pid);

// The sum of sum_exec_runtime over /proc/<pid>/task/*/schedstat, in
// nanoseconds: the same quantity at scheduler resolution. -1 when the
// kernel does not provide schedstat. Threads that exited are not counted.
[[nodiscard]] std::int64_t read_sched_ns(pid_t pid);

}  // namespace sandgate::bench
