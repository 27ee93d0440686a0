#include <gateway/log.hpp>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

namespace sandgate::gateway::log {
namespace {

std::atomic<level> min_level{level::info};

constexpr std::string_view name(level l) {
  switch (l) {
    case level::debug:
      return "debug";
    case level::info:
      return "info";
    case level::warn:
      return "warn";
    case level::error:
      return "error";
  }
  return "info";
}

std::string now_utc() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];  // room for any int the format could get
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

}  // namespace

void set_min_level(level l) noexcept {
  min_level = l;
}

void write(level l, std::string_view event, std::initializer_list<field> fields) {
  if (l < min_level.load(std::memory_order_relaxed)) return;
  nlohmann::json line{{"time", now_utc()}, {"level", name(l)}, {"event", event}};
  for (const auto& [k, v] : fields)
    line[std::string(k)] = v;
  const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::fwrite(text.data(), 1, text.size(), stderr);
}

}  // namespace sandgate::gateway::log
