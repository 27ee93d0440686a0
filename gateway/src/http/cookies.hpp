#pragma once
// The items of a Cookie request header ("a=1; b=2"), one at a time.

#include <string_view>

namespace sandgate::gateway {

// Calls visit(name, value, item) for each non-empty item of `cookies`, where
// `item` is the whole "name=value" text; an item without '=' has an empty
// value and its whole text as the name.
template <class Visit>
void for_each_cookie(std::string_view cookies, Visit&& visit) {
  while (!cookies.empty()) {
    const auto semi = cookies.find(';');
    auto item = cookies.substr(0, semi);
    cookies = semi == std::string_view::npos ? std::string_view() : cookies.substr(semi + 1);
    while (!item.empty() && item.front() == ' ')
      item.remove_prefix(1);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    visit(item.substr(0, eq), eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1), item);
  }
}

}  // namespace sandgate::gateway
