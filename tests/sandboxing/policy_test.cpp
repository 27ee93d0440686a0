#include "sandboxing/policy.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sb = sandgate::sandboxing;

namespace {

std::string error_of(const std::string& text) {
  try {
    sb::parse_policy(text);
  } catch (const sb::policy_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(policy, empty_document_gives_secure_defaults) {
  const sb::policy p = sb::parse_policy("{}");
  EXPECT_EQ(p.limits.memory_bytes, 2ull << 30);
  EXPECT_DOUBLE_EQ(p.limits.cpu, 1.0);
  EXPECT_EQ(p.limits.pids, 256u);
  EXPECT_EQ(p.limits.workspace_bytes, 1ull << 30);
  EXPECT_EQ(p.network.mode, sb::network_mode::none);
  EXPECT_EQ(p.ttl_s, 86400u);
  EXPECT_EQ(p.max_execution_s, 600u);
  EXPECT_TRUE(p.env.set.empty());
  EXPECT_TRUE(p.env.pass.empty());
  EXPECT_TRUE(p.mounts.empty());
  EXPECT_EQ(p.uid, 1000u);
  EXPECT_EQ(p.gid, 1000u);
}

TEST(policy, shipped_default_policy_parses) {
  const sb::policy p = sb::load_policy(SANDGATE_DEFAULT_POLICY);
  EXPECT_EQ(p.limits.memory_bytes, 2ull << 30);
  EXPECT_EQ(p.limits.pids, 256u);
  EXPECT_EQ(p.network.mode, sb::network_mode::none);
  EXPECT_EQ(p.ttl_s, 24u * 3600);
  EXPECT_EQ(p.max_execution_s, 600u);
}

TEST(policy, parses_every_field) {
  const sb::policy p = sb::parse_policy(R"({
    "limits": {"memory_bytes": 536870912, "cpu": 0.5, "pids": 64, "workspace_bytes": 10485760,
               "tmp_bytes": 1048576, "open_files": 256, "file_size_bytes": 2097152},
    "ttl_s": 60, "max_execution_s": 30, "network": "loopback",
    "env": {"set": {"LANG": "C.UTF-8"}, "pass": ["TZ"]}, "hostname": "box-1",
    "mounts": [{"source": "/srv/data", "target": "/data", "read_only": false}],
    "uid": 1001, "gid": 1002})");
  EXPECT_EQ(p.limits.memory_bytes, 536870912u);
  EXPECT_DOUBLE_EQ(p.limits.cpu, 0.5);
  EXPECT_EQ(p.limits.open_files, 256u);
  EXPECT_EQ(p.network.mode, sb::network_mode::loopback);
  EXPECT_EQ(p.env.set.at("LANG"), "C.UTF-8");
  ASSERT_EQ(p.env.pass.size(), 1u);
  ASSERT_EQ(p.mounts.size(), 1u);
  EXPECT_FALSE(p.mounts[0].read_only);
  EXPECT_EQ(p.hostname, "box-1");
  EXPECT_EQ(p.uid, 1001u);
}

TEST(policy, round_trips_through_json) {
  const sb::policy p = sb::parse_policy(R"({"limits": {"cpu": 2.5}, "network": "loopback", "ttl_s": 99})");
  const sb::policy q = sb::parse_policy(sb::to_json_text(p));
  EXPECT_DOUBLE_EQ(q.limits.cpu, 2.5);
  EXPECT_EQ(q.network.mode, sb::network_mode::loopback);
  EXPECT_EQ(q.ttl_s, 99u);
}

struct bad_policy {
  const char* text;
  const char* expected;
};

class policy_errors : public testing::TestWithParam<bad_policy> {};

TEST_P(policy_errors, name_the_field) {
  const std::string error = error_of(GetParam().text);
  EXPECT_NE(error.find(GetParam().expected), std::string::npos) << error;
}

INSTANTIATE_TEST_SUITE_P(
    policy, policy_errors,
    testing::Values(
        bad_policy{"{", "not valid JSON"}, bad_policy{"[]", "must be an object"},
        bad_policy{R"({"colour": 1})", "policy: colour: unknown field"},
        bad_policy{R"({"limits": {"memroy_bytes": 1}})", "limits.memroy_bytes: unknown field"},
        bad_policy{R"({"limits": {"memory_bytes": "2G"}})", "limits.memory_bytes: must be a non-negative"},
        bad_policy{R"({"limits": {"memory_bytes": 1024}})", "limits.memory_bytes: must be at least"},
        bad_policy{R"({"limits": {"cpu": 0}})", "limits.cpu"},
        bad_policy{R"({"limits": {"pids": 2}})", "limits.pids: must be at least 8"},
        bad_policy{R"({"limits": {"open_files": 4}})", "limits.open_files"},
        bad_policy{R"({"ttl_s": 0})", "ttl_s: must be at least 1"},
        bad_policy{R"({"ttl_s": -5})", "ttl_s: must be a non-negative integer"},
        bad_policy{R"({"network": "host"})",
                   "network: must be \"none\", \"loopback\", \"allow\" or \"open\""},
        bad_policy{R"({"env": {"set": {"A": 1}}})", "env.set.A: must be a string"},
        bad_policy{R"({"env": {"set": {"1A": "x"}}})", "env.set.1A"},
        bad_policy{R"({"env": {"pass": ["OK", "NOT OK"]}})", "env.pass"},
        bad_policy{R"({"hostname": "a b"})", "hostname"},
        bad_policy{R"({"mounts": [{"source": "data", "target": "/data"}]})", "mounts[0].source"},
        bad_policy{R"({"mounts": [{"source": "/d", "target": "/x/../etc"}]})", "mounts[0].target"},
        bad_policy{R"({"mounts": [{"source": "/d", "target": "/usr/lib/x"}]})", "mounts[0].target"},
        bad_policy{R"({"mounts": [{"source": "/d", "target": "/proc"}]})", "mounts[0].target"},
        bad_policy{R"({"mounts": [{"source": "/d", "target": "/data", "rw": true}]})",
                   "mounts[0].rw: unknown field"},
        bad_policy{R"({"uid": 0})", "uid: must be between 1 and 65533"},
        bad_policy{R"({"gid": 70000})", "gid"}));
