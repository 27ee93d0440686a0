#include "descriptor_budget.hpp"

#include <algorithm>
#include <limits>

namespace sandgate::gateway {

descriptor_budget share_descriptors(std::uint64_t open_file_limit, std::size_t most_kernels) {
  descriptor_budget b;
  b.open_file_limit = open_file_limit;
  const auto kernels = std::min<std::size_t>(
      most_kernels, std::numeric_limits<std::size_t>::max() / 2 / descriptors_per_kernel);
  b.reserved = kernels * descriptors_per_kernel + descriptors_for_the_gateway;
  const std::uint64_t left = b.holds_reserve() ? open_file_limit - b.reserved : open_file_limit / 4;
  b.for_clients =
      static_cast<std::size_t>(std::min<std::uint64_t>(left, std::numeric_limits<std::size_t>::max()));
  return b;
}

std::size_t connection_cap(std::size_t configured, const descriptor_budget& budget) {
  return std::max<std::size_t>(1, std::min(configured, budget.for_clients));
}

}  // namespace sandgate::gateway
