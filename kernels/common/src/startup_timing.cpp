#include "sandgate_kernels/startup_timing.hpp"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace sandgate::kernels {
namespace {

bool timing_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("SANDGATE_KERNEL_TIMING");
    return value != nullptr && value[0] != '\0' && !(value[0] == '0' && value[1] == '\0');
  }();
  return enabled;
}

}  // namespace

void startup_mark(const char* program, const char* step) noexcept {
  if (!timing_enabled()) return;
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  char line[200];
  const int n =
      std::snprintf(line, sizeof line, "%s timing %d %lld %s\n", program, static_cast<int>(::getpid()),
                    static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec, step);
  if (n > 0) {
    const auto size =
        static_cast<std::size_t>(n) < sizeof line ? static_cast<std::size_t>(n) : sizeof line - 1;
    (void)!::write(2, line, size);
  }
}

}  // namespace sandgate::kernels
