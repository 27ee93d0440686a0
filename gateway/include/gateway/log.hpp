#pragma once
// One structured logger: JSON lines on stderr, each with a time, a level, an
// event name and the ids it concerns. Never pass keys or tokens to it.

#include <initializer_list>
#include <string_view>
#include <utility>

namespace sandgate::gateway::log {

enum class level { debug, info, warn, error };

using field = std::pair<std::string_view, std::string_view>;

void set_min_level(level l) noexcept;
void write(level l, std::string_view event, std::initializer_list<field> fields = {});

inline void info(std::string_view event, std::initializer_list<field> f = {}) {
  write(level::info, event, f);
}
inline void warn(std::string_view event, std::initializer_list<field> f = {}) {
  write(level::warn, event, f);
}
inline void error(std::string_view event, std::initializer_list<field> f = {}) {
  write(level::error, event, f);
}
inline void debug(std::string_view event, std::initializer_list<field> f = {}) {
  write(level::debug, event, f);
}

}  // namespace sandgate::gateway::log
