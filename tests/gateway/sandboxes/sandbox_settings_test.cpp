// A creator's sandbox settings (POST /api/sandboxes): what parses, and the
// error of what does not, naming the field.
#include "sandboxes/sandbox_settings.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sandgate::gateway {
namespace {

using json = nlohmann::json;

TEST(sandbox_settings, empty_body_sets_nothing) {
  std::string error;
  const auto s = sandbox_settings::from_json(json::object(), error);
  ASSERT_TRUE(s) << error;
  EXPECT_FALSE(s->ttl_s || s->idle_timeout_s || s->memory_bytes || s->cpu || s->pids || s->workspace_bytes ||
               s->network);
  EXPECT_TRUE(s->metadata.empty());
  EXPECT_TRUE(s->env.empty());
}

TEST(sandbox_settings, reads_every_field) {
  std::string error;
  const auto s = sandbox_settings::from_json(
      json::parse(R"({"ttl_s": 600, "idle_timeout_s": 60, "metadata": {"conversation": "c-1"},
                      "limits": {"memory_bytes": 536870912, "cpu": 0.5, "pids": 64, "workspace_bytes": 1048576},
                      "network": {"mode": "allow", "hosts": ["pypi.org"]}, "env": {"MY_SETTING": "1"}})"),
      error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->ttl_s, 600u);
  EXPECT_EQ(s->idle_timeout_s, 60u);
  EXPECT_EQ(s->metadata.at("conversation"), "c-1");
  EXPECT_EQ(s->memory_bytes, 536870912u);
  EXPECT_EQ(s->cpu, 0.5);
  EXPECT_EQ(s->pids, 64u);
  EXPECT_EQ(s->workspace_bytes, 1048576u);
  ASSERT_TRUE(s->network);
  EXPECT_EQ(s->network->at("mode"), "allow");  // checked against the ceiling at create, not here
  EXPECT_EQ(s->env.at("MY_SETTING"), "1");
}

TEST(sandbox_settings, null_is_unset) {
  std::string error;
  const auto s =
      sandbox_settings::from_json(json::parse(R"({"ttl_s": null, "limits": null, "network": null})"), error);
  ASSERT_TRUE(s) << error;
  EXPECT_FALSE(s->ttl_s || s->memory_bytes || s->network);
}

struct bad_settings {
  const char* name;
  const char* body;
  const char* error;
};

class sandbox_settings_errors : public ::testing::TestWithParam<bad_settings> {};

TEST_P(sandbox_settings_errors, name_the_field) {
  std::string error;
  EXPECT_FALSE(sandbox_settings::from_json(json::parse(GetParam().body), error)) << GetParam().body;
  EXPECT_EQ(error, GetParam().error) << GetParam().body;
}

INSTANTIATE_TEST_SUITE_P(
    table, sandbox_settings_errors,
    ::testing::Values(
        bad_settings{"unknown_field", R"({"unknown": true})", R"(Unknown field "unknown")"},
        bad_settings{"ttl_zero", R"({"ttl_s": 0})", R"("ttl_s" must be a positive integer)"},
        bad_settings{"ttl_negative", R"({"ttl_s": -1})", R"("ttl_s" must be a positive integer)"},
        bad_settings{"ttl_fraction", R"({"ttl_s": 1.5})", R"("ttl_s" must be a positive integer)"},
        bad_settings{"idle_timeout_string", R"({"idle_timeout_s": "60"})",
                     R"("idle_timeout_s" must be a positive integer)"},
        bad_settings{"limits_array", R"({"limits": [1]})", R"("limits" must be an object)"},
        bad_settings{"limit_unknown", R"({"limits": {"bogus": 1}})",
                     R"(Unknown limit "bogus" (memory_bytes, cpu, pids, workspace_bytes))"},
        bad_settings{"memory_zero", R"({"limits": {"memory_bytes": 0}})",
                     R"("memory_bytes" must be a positive integer)"},
        bad_settings{"cpu_negative", R"({"limits": {"cpu": -1}})", R"("cpu" must be a positive number)"},
        bad_settings{"cpu_string", R"({"limits": {"cpu": "1"}})", R"("cpu" must be a positive number)"},
        bad_settings{"pids_fraction", R"({"limits": {"pids": 1.5}})", R"("pids" must be a positive integer)"},
        bad_settings{"workspace_negative", R"({"limits": {"workspace_bytes": -5}})",
                     R"("workspace_bytes" must be a positive integer)"},
        bad_settings{"metadata_number", R"({"metadata": {"k": 1}})", R"("metadata": bad entry "k")"},
        bad_settings{"metadata_string", R"({"metadata": "x"})",
                     R"("metadata" must be an object of at most 64 string values)"},
        bad_settings{"env_digit_first", R"({"env": {"1BAD": "x"}})", R"("env": bad entry "1BAD")"},
        bad_settings{"env_dash", R"({"env": {"A-B": "x"}})", R"("env": bad entry "A-B")"},
        bad_settings{"network_number", R"({"network": 5})",
                     R"("network" must be a mode ("none", "loopback", "allow", "open") or an object)"}),
    [](const auto& test) { return std::string(test.param.name); });

TEST(sandbox_settings, bounds_metadata_and_env) {
  json body = {{"metadata", json::object()}};
  for (int i = 0; i < 65; ++i)
    body["metadata"]["k" + std::to_string(i)] = "v";
  std::string error;
  EXPECT_FALSE(sandbox_settings::from_json(body, error));
  EXPECT_EQ(error, R"("metadata" must be an object of at most 64 string values)");
  body = {{"metadata", {{"k", std::string(257, 'x')}}}};
  EXPECT_FALSE(sandbox_settings::from_json(body, error));
  EXPECT_EQ(error, R"("metadata": bad entry "k")");
  body = {{"env", {{"BIG", std::string(64 * 1024 + 1, 'x')}}}};
  EXPECT_FALSE(sandbox_settings::from_json(body, error));
  EXPECT_EQ(error, R"("env": bad entry "BIG")");
}

TEST(sandbox_settings, env_names) {
  EXPECT_TRUE(is_env_name("PATH"));
  EXPECT_TRUE(is_env_name("_a1"));
  EXPECT_FALSE(is_env_name(""));
  EXPECT_FALSE(is_env_name("1A"));
  EXPECT_FALSE(is_env_name("A=B"));
  EXPECT_TRUE(is_kernel_variable("KERNEL_USERNAME"));
  EXPECT_FALSE(is_kernel_variable("KERNELX"));
}

}  // namespace
}  // namespace sandgate::gateway
