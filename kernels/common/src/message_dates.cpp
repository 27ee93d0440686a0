// Message dates with zero-padded microseconds.
//
// xeus 2.4.1 writes a header's date with its microseconds unpadded: 0.013694 s
// past a second comes out as ".13694", which every reader takes for 0.13694 s,
// so the dates of one kernel's messages jump back and forth within a second
// (a cell's timing in a notebook, a gateway's reading of the kernel's
// journal). libxeus calls xeus::iso8601_now through the dynamic linker: the
// executable's definition below comes first in symbol lookup, so every header
// the kernel makes gets it.

#include <xeus/xmessage.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace xeus {

std::string iso8601_now() {
  const auto since_epoch = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  const auto seconds = std::chrono::floor<std::chrono::seconds>(since_epoch);
  const std::time_t t = static_cast<std::time_t>(seconds.count());
  std::tm utc{};
  gmtime_r(&t, &utc);
  std::array<char, 40> text{};
  const int n = std::snprintf(text.data(), text.size(), "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ",
                              utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min,
                              utc.tm_sec, static_cast<long long>((since_epoch - seconds).count()));
  return std::string(text.data(), static_cast<std::size_t>(n));
}

}  // namespace xeus
