#pragma once
// Percentiles of a sample (nearest rank).

#include <algorithm>
#include <cmath>
#include <vector>

namespace sandgate::bench {

[[nodiscard]] inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

}  // namespace sandgate::bench
