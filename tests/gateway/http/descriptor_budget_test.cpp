// descriptor_budget: what an open-file limit leaves for client connections
// once each kernel's descriptors and the gateway's own are kept.

#include "http/descriptor_budget.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace sandgate::gateway {
namespace {

TEST(descriptor_budget, keeps_sixteen_per_kernel_and_the_gateways_own) {
  const auto b = share_descriptors(20000, 64);
  EXPECT_EQ(b.reserved, 64 * descriptors_per_kernel + descriptors_for_the_gateway);
  EXPECT_TRUE(b.holds_reserve());
  EXPECT_EQ(b.for_clients, 20000 - b.reserved);
  EXPECT_EQ(connection_cap(4096, b), 4096u);  // the configured number fits
  EXPECT_EQ(connection_cap(100000, b), b.for_clients);
}

TEST(descriptor_budget, a_low_limit_gives_clients_what_is_left) {
  const auto b = share_descriptors(1024, 8);
  EXPECT_EQ(b.reserved, 8 * descriptors_per_kernel + descriptors_for_the_gateway);
  EXPECT_EQ(connection_cap(4096, b), 1024 - b.reserved);
}

TEST(descriptor_budget, a_limit_under_the_reserve_gives_clients_a_quarter) {
  const auto b = share_descriptors(1024, 64);  // 64 kernels need 1280
  EXPECT_FALSE(b.holds_reserve());
  EXPECT_EQ(b.kernels_that_fit(), (1024 - descriptors_for_the_gateway) / descriptors_per_kernel);
  EXPECT_EQ(b.for_clients, 256u);
  EXPECT_EQ(connection_cap(4096, b), 256u);
  EXPECT_EQ(connection_cap(4096, share_descriptors(2, 64)), 1u);  // never none
}

TEST(descriptor_budget, an_unlimited_limit_leaves_the_configured_number) {
  const auto b = share_descriptors(std::numeric_limits<std::uint64_t>::max(), 1000);
  EXPECT_TRUE(b.holds_reserve());
  EXPECT_EQ(connection_cap(4096, b), 4096u);
}

TEST(descriptor_budget, kernels_beyond_any_limit_do_not_overflow) {
  const auto b = share_descriptors(1024, std::numeric_limits<std::size_t>::max());
  EXPECT_FALSE(b.holds_reserve());
  EXPECT_EQ(connection_cap(4096, b), 256u);
}

}  // namespace
}  // namespace sandgate::gateway
