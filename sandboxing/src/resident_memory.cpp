#include "resident_memory.hpp"

#include <fcntl.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace sandgate::sandboxing::detail {
namespace {

struct mapping {
  unsigned long start = 0;
  unsigned long end = 0;
  bool candidate = false;  // read-only, private, of our program file
  bool modified = false;   // holds anonymous (copied-on-write) pages
};

}  // namespace

void release_idle_memory() noexcept {
  try {
    char exe[4096];
    const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return;
    exe[n] = '\0';
    std::FILE* smaps = std::fopen("/proc/self/smaps", "re");
    if (smaps == nullptr) return;
    std::vector<mapping> mappings;
    char line[4352];
    while (std::fgets(line, sizeof line, smaps) != nullptr) {
      mapping m;
      char perms[8] = {};
      int path_at = 0;
      if (std::sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &m.start, &m.end, perms, &path_at) >= 3 &&
          path_at > 0) {
        std::string path(line + path_at);
        if (!path.empty() && path.back() == '\n') path.pop_back();
        m.candidate = path == exe && (std::strcmp(perms, "r-xp") == 0 || std::strcmp(perms, "r--p") == 0);
        mappings.push_back(m);
      } else if (!mappings.empty() && std::strncmp(line, "Anonymous:", 10) == 0) {
        unsigned long kib = 0;
        if (std::sscanf(line + 10, "%lu", &kib) != 1 || kib != 0) mappings.back().modified = true;
      }
    }
    (void)std::fclose(smaps);  // read only: nothing to lose
    for (const auto& m : mappings) {
      if (m.candidate && !m.modified) {
        // NOLINTNEXTLINE(performance-no-int-to-ptr): an address smaps gave
        ::madvise(reinterpret_cast<void*>(m.start), m.end - m.start, MADV_DONTNEED);
      }
    }
  } catch (...) {  // allocation failure: keep the pages
  }
  ::malloc_trim(0);
}

// Called while the process has one thread.
void keep_heap_small() noexcept {
  ::mallopt(M_MMAP_THRESHOLD, 64 * 1024);   // NOLINT(concurrency-mt-unsafe)
  ::mallopt(M_TRIM_THRESHOLD, 128 * 1024);  // NOLINT(concurrency-mt-unsafe)
}

}  // namespace sandgate::sandboxing::detail
