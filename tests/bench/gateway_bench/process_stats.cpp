#include "process_stats.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace sandgate::bench {

memory_kib read_memory(pid_t pid) {
  memory_kib m;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    std::int64_t value = -1;
    fields >> key >> value;
    if (key == "VmRSS:") m.rss = value;
    if (key == "VmHWM:") m.peak = value;
  }
  return m;
}

std::int64_t read_cpu_us(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return -1;
  const auto close_paren = stat.rfind(')');  // the command name may hold spaces
  if (close_paren == std::string::npos) return -1;
  std::istringstream fields(stat.substr(close_paren + 2));
  std::string field;
  std::int64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {  // field 3 is the state
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  const long ticks = ::sysconf(_SC_CLK_TCK);
  return (utime + stime) * 1'000'000 / ticks;
}

std::int64_t read_sched_ns(pid_t pid) {
  std::error_code ec;
  std::int64_t total = 0;
  bool any = false;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "schedstat");
    std::int64_t ns = 0;
    if (in >> ns) {
      total += ns;
      any = true;
    }
  }
  return any ? total : -1;
}

}  // namespace sandgate::bench
