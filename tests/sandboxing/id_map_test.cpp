#include "sandboxing/id_map.hpp"

#include <gtest/gtest.h>

#include "sandboxing/launcher.hpp"

namespace sb = sandgate::sandboxing;

TEST(id_map, slot_is_stable_and_in_range) {
  EXPECT_EQ(sb::host_id_slot("abc", 1000), sb::host_id_slot("abc", 1000));
  EXPECT_NE(sb::host_id_slot("abc", 30000), sb::host_id_slot("abd", 30000));
  for (const char* id : {"a", "b", "sandbox-1", "0123456789abcdef"})
    EXPECT_LT(sb::host_id_slot(id, 7), 7u);
}

TEST(id_map, privileged_maps_never_include_host_root) {
  sb::id_plan plan;
  plan.privileged = true;
  plan.inside_uid = plan.inside_gid = 1000;
  plan.supervisor_host_uid = plan.supervisor_host_gid = 200010;
  plan.host_uid = plan.host_gid = 200011;
  EXPECT_EQ(sb::uid_map_text(plan), "0 200010 1\n1000 200011 1\n");
  EXPECT_EQ(sb::gid_map_text(plan), "0 200010 1\n1000 200011 1\n");
  EXPECT_EQ(plan.supervisor_uid(), 0u);
}

TEST(id_map, unprivileged_maps_only_the_caller) {
  sb::id_plan plan;
  plan.inside_uid = 1000;
  plan.inside_gid = 1000;
  plan.host_uid = 1234;
  plan.host_gid = 1235;
  EXPECT_EQ(sb::uid_map_text(plan), "1000 1234 1\n");
  EXPECT_EQ(sb::gid_map_text(plan), "1000 1235 1\n");
  EXPECT_EQ(plan.supervisor_uid(), 1000u);
}

TEST(id_map, plan_uses_the_range_when_root) {
  const sb::id_plan plan = sb::plan_ids(1000, 1000, 200000, 5);
  if (plan.privileged) {
    EXPECT_EQ(plan.supervisor_host_uid, 200010u);
    EXPECT_EQ(plan.host_uid, 200011u);
  } else {
    EXPECT_NE(plan.host_uid, 0u);
  }
}

TEST(launcher, sandbox_ids_are_safe_path_components) {
  EXPECT_TRUE(sb::valid_sandbox_id("8a3e0c1e-5f0b-4c57-9d1e-2a9b1f1c0d00"));
  EXPECT_TRUE(sb::valid_sandbox_id("k_1.x"));
  for (const char* bad : {"", ".", "..", "a/b", "a b", "../../etc"})
    EXPECT_FALSE(sb::valid_sandbox_id(bad)) << bad;
  EXPECT_FALSE(sb::valid_sandbox_id(std::string(65, 'a')));
}
