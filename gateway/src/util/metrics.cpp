#include "metrics.hpp"

#include <cstdio>

namespace sandgate::gateway {

void histogram::observe(std::chrono::steady_clock::duration d) {
  const double s = std::chrono::duration<double>(d).count();
  for (std::size_t i = 0; i < bounds_s.size(); ++i)
    if (s <= bounds_s[i]) ++buckets_[i];
  ++count_;
  sum_s_ += s;
}

std::string histogram::render(const std::string& name, const std::string& help) const {
  std::string out = "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  char le[32];
  for (std::size_t i = 0; i < bounds_s.size(); ++i) {
    std::snprintf(le, sizeof le, "%g", bounds_s[i]);
    out += name + "_bucket{le=\"" + le + "\"} " + std::to_string(buckets_[i]) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  char sum[48];
  std::snprintf(sum, sizeof sum, "%.6f", sum_s_);
  out += name + "_sum " + sum + "\n" + name + "_count " + std::to_string(count_) + "\n";
  return out;
}

metrics& gateway_metrics() {
  static metrics m;
  return m;
}

}  // namespace sandgate::gateway
