#include "timing.hpp"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace sandgate::sandboxing::detail {
namespace {
bool enabled = false;
}

void timing_init() {
  const char* value = std::getenv("SANDGATE_SANDBOX_TIMING");
  enabled = value != nullptr && value[0] != '\0' && value[0] != '0';
}

void timing_mark(const char* step) {
  if (!enabled) return;
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  char line[160];
  const int n =
      std::snprintf(line, sizeof line, "sandgate-sandbox timing %d %lld %s\n", static_cast<int>(::getpid()),
                    static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec, step);
  if (n > 0) (void)!::write(2, line, static_cast<std::size_t>(n) < sizeof line ? n : sizeof line - 1);
}

}  // namespace sandgate::sandboxing::detail
