// The gateway's sandbox policies against the supervisor's reading of them.
// For each operator policy file, the gateway's builder and `sandgate-sandbox
// --check-policy` (the program of this build, run for real) read it to the
// same values; and the policy the gateway writes for each sandbox reads, in
// the supervisor, to the values the gateway keeps for it (its limits and
// execution limit). Then what a creator may not ask for, each error naming
// the field.
#include "sandboxes/sandbox_policy_builder.hpp"

#include "check_policy.hpp"
#include "scratch_dir.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>

namespace sandgate::gateway {
namespace {

namespace fs = std::filesystem;
namespace sb = sandgate::sandboxing;
using json = nlohmann::json;

constexpr std::uint64_t mib = 1024 * 1024;

void expect_kept_values_match(const sb::policy& p, const json& read) {
  const sandbox_limits kept = limits_of(p);
  EXPECT_EQ(kept.memory_bytes, read["limits"]["memory_bytes"].get<std::uint64_t>());
  EXPECT_EQ(kept.cpu, read["limits"]["cpu"].get<double>());
  EXPECT_EQ(kept.pids, read["limits"]["pids"].get<std::uint64_t>());
  EXPECT_EQ(kept.workspace_bytes, read["limits"]["workspace_bytes"].get<std::uint64_t>());
  EXPECT_EQ(p.max_execution_s, read["max_execution_s"].get<std::uint64_t>());
  EXPECT_EQ(p.ttl_s, read["ttl_s"].get<std::uint64_t>());
}

struct operator_file {
  const char* name;
  const char* text;
};

class same_values : public ::testing::TestWithParam<operator_file> {};

TEST_P(same_values, in_the_gateway_and_the_supervisor) {
  scratch_dir dir;
  const auto file = dir.write("operator.json", GetParam().text);
  const sandbox_policy_builder builder(file);
  const json read = supervisor_reads(file);
  EXPECT_EQ(json::parse(sb::to_json_text(builder.operator_policy())), read);
  expect_kept_values_match(builder.operator_policy(), read);

  // A sandbox whose creator asks for nothing gets the operator's policy.
  domain_error err;
  const auto plain = builder.build({}, builder.operator_policy().network, {}, err);
  ASSERT_TRUE(plain) << err.message;
  EXPECT_EQ(sb::to_json_text(*plain), sb::to_json_text(builder.operator_policy()));
  const auto plain_file = dir.path() / "policies" / "plain.json";
  ASSERT_FALSE(sandbox_policy_builder::write(*plain, plain_file));
  EXPECT_EQ(supervisor_reads(plain_file), read);

  // One whose creator lowers everything it may, with env, a network within
  // the ceiling and a kernel program directory bound inside.
  sandbox_settings settings;
  settings.memory_bytes = 32 * mib;
  settings.cpu = 0.25;
  settings.pids = 16;
  settings.workspace_bytes = 2 * mib;
  settings.ttl_s = 60;
  settings.env = {{"MY_SETTING", "1"}, {"LANG", "C"}};
  const auto& ceiling = builder.operator_policy().network_ceiling;
  const sb::network_policy network =
      ceiling.mode == sb::network_mode::allow
          ? sb::parse_network_policy(json::parse(R"({"mode": "allow", "hosts": ["files.example.com"],
                                                    "ports": [443], "max_connections": 4})"),
                                     "network")
          : builder.operator_policy().network;
  const std::map<std::string, std::string> programs = {{"/srv/kernels/bin", "/opt/sandgate/programs/0"}};
  const auto lowered = builder.build(settings, network, programs, err);
  ASSERT_TRUE(lowered) << err.message;
  const auto lowered_file = dir.path() / "policies" / "lowered.json";
  ASSERT_FALSE(sandbox_policy_builder::write(*lowered, lowered_file));
  const json lowered_read = supervisor_reads(lowered_file);
  EXPECT_EQ(json::parse(sb::to_json_text(*lowered)), lowered_read);
  expect_kept_values_match(*lowered, lowered_read);
  EXPECT_EQ(lowered_read["limits"]["memory_bytes"], 32 * mib);
  EXPECT_EQ(lowered_read["ttl_s"], 60);
  EXPECT_EQ(lowered_read["env"]["set"]["MY_SETTING"], "1");
  EXPECT_EQ(lowered_read["env"]["set"]["LANG"], "C");
  EXPECT_EQ(lowered_read["network"], sb::to_json(network));
  EXPECT_EQ(lowered_read["network_ceiling"], read["network_ceiling"]);  // the operator's, unchanged
  EXPECT_EQ(
      lowered_read["mounts"].back(),
      json({{"source", "/srv/kernels/bin"}, {"target", "/opt/sandgate/programs/0"}, {"read_only", true}}));
  // What a creator leaves alone stays the operator's.
  EXPECT_EQ(lowered_read["limits"]["tmp_bytes"], read["limits"]["tmp_bytes"]);
  EXPECT_EQ(lowered_read["max_execution_s"], read["max_execution_s"]);
}

INSTANTIATE_TEST_SUITE_P(
    operator_files, same_values,
    ::testing::Values(
        operator_file{"empty", "{}"},
        operator_file{"no_limits_no_max_execution", R"({"ttl_s": 3600, "network": "none"})"},
        operator_file{"partial_limits", R"({"limits": {"cpu": 2, "pids": 100}, "max_execution_s": 5})"},
        operator_file{"every_limit", R"({"limits": {"memory_bytes": 536870912, "cpu": 0.5, "pids": 64,
                                                     "workspace_bytes": 67108864, "tmp_bytes": 33554432,
                                                     "open_files": 256, "file_size_bytes": 134217728},
                                          "ttl_s": 7200, "max_execution_s": 30})"},
        operator_file{"network_and_ceiling", R"({"network": "loopback",
            "network_ceiling": {"mode": "allow", "hosts": ["*.example.com"], "ports": [443],
                                "max_connections": 8}})"},
        operator_file{"env_and_mounts", R"({"env": {"set": {"LANG": "C.UTF-8"}, "pass": ["TZ"]},
            "mounts": [{"source": "/srv/data", "target": "/data"}], "hostname": "box", "uid": 1001})"}),
    [](const auto& test) { return std::string(test.param.name); });

TEST(sandbox_policy_builder, shipped_default_policy_reads_the_same_and_states_its_values) {
  const sandbox_policy_builder builder(SANDGATE_DEFAULT_POLICY);
  const json read = supervisor_reads(SANDGATE_DEFAULT_POLICY);
  EXPECT_EQ(json::parse(sb::to_json_text(builder.operator_policy())), read);
  // Every value the gateway shows or enforces is written out, none left to a default.
  const json shipped = json::parse(std::ifstream(SANDGATE_DEFAULT_POLICY));
  for (const auto& [key, value] : read.items())
    EXPECT_TRUE(key == "network_ceiling" || shipped.contains(key)) << key;
  for (const auto& [key, value] : read["limits"].items())
    EXPECT_TRUE(shipped["limits"].contains(key)) << "limits." << key;
}

TEST(sandbox_policy_builder, no_limits_in_the_file_means_the_typed_defaults) {
  scratch_dir dir;
  const auto file = dir.write("operator.json", R"({"network": "none"})");
  const sandbox_policy_builder builder(file);
  const sb::policy typed;
  EXPECT_EQ(builder.default_limits().memory_bytes, 2048 * mib);
  EXPECT_EQ(builder.default_limits().memory_bytes, typed.limits.memory_bytes);
  EXPECT_EQ(builder.default_limits().cpu, typed.limits.cpu);
  EXPECT_EQ(builder.default_limits().pids, typed.limits.pids);
  EXPECT_EQ(builder.default_limits().workspace_bytes, typed.limits.workspace_bytes);
  EXPECT_EQ(builder.operator_policy().max_execution_s, 600u);
  EXPECT_EQ(builder.max_ttl_s(), typed.ttl_s);
  const json read = supervisor_reads(file);
  EXPECT_EQ(read["limits"]["memory_bytes"], 2048 * mib);
  EXPECT_EQ(read["max_execution_s"], 600);
}

TEST(sandbox_policy_builder, an_invalid_operator_file_is_refused_as_the_supervisor_refuses_it) {
  scratch_dir dir;
  for (const auto& [text, field] :
       std::map<std::string, std::string>{{R"({"limits": {"memory_bytes": 1}})", "limits.memory_bytes"},
                                          {R"({"limit": {}})", "limit"},
                                          {R"({"max_execution_s": 0})", "max_execution_s"},
                                          {R"({"network": "allow", "network_ceiling": "none"})", "network"},
                                          {"{not json", ""}}) {
    const auto file = dir.write("operator.json", text);
    std::string gateway_error;
    try {
      sandbox_policy_builder{file};
    } catch (const sb::policy_error& e) {
      gateway_error = e.what();
    }
    ASSERT_FALSE(gateway_error.empty()) << text;
    EXPECT_EQ(gateway_error.rfind(file.string() + ": policy: " + field, 0), 0u) << gateway_error;
    const auto r = check_policy(file);
    EXPECT_NE(r.status, 0) << text;
    EXPECT_NE(r.output.find(gateway_error), std::string::npos) << r.output;
  }
  try {
    sandbox_policy_builder{dir.path() / "missing.json"};
    ADD_FAILURE() << "a missing file was read";
  } catch (const sb::policy_error& e) {
    EXPECT_EQ(std::string(e.what()), "policy: cannot read " + (dir.path() / "missing.json").string());
  }
}

struct refused_setting {
  const char* name;
  sandbox_settings settings;
  std::map<std::string, std::string> programs;
  const char* error;
};

class creator_errors : public ::testing::TestWithParam<refused_setting> {};

TEST_P(creator_errors, name_the_field) {
  scratch_dir dir;
  const sandbox_policy_builder builder(dir.write("operator.json", "{}"));
  domain_error err;
  EXPECT_FALSE(builder.build(GetParam().settings, {}, GetParam().programs, err));
  EXPECT_EQ(err.kind, fault::invalid);
  EXPECT_EQ(err.message, GetParam().error);
}

sandbox_settings with(void (*set)(sandbox_settings&)) {
  sandbox_settings s;
  set(s);
  return s;
}

INSTANTIATE_TEST_SUITE_P(
    table, creator_errors,
    ::testing::Values(
        refused_setting{"memory_above",
                        with([](sandbox_settings& s) { s.memory_bytes = 4096 * mib; }),
                        {},
                        "limits.memory_bytes 4294967296 is above this gateway's maximum of 2147483648"},
        refused_setting{"memory_below",
                        with([](sandbox_settings& s) { s.memory_bytes = mib; }),
                        {},
                        "limits.memory_bytes: must be at least 16777216"},
        refused_setting{"cpu_above",
                        with([](sandbox_settings& s) { s.cpu = 2.0; }),
                        {},
                        "limits.cpu 2.0 is above this gateway's maximum of 1.0"},
        refused_setting{"cpu_below",
                        with([](sandbox_settings& s) { s.cpu = 0.001; }),
                        {},
                        "limits.cpu: must be between 0.01 and 1024 cores"},
        refused_setting{"pids_above",
                        with([](sandbox_settings& s) { s.pids = 1000; }),
                        {},
                        "limits.pids 1000 is above this gateway's maximum of 256"},
        refused_setting{"pids_below",
                        with([](sandbox_settings& s) { s.pids = 4; }),
                        {},
                        "limits.pids: must be at least 8"},
        refused_setting{"workspace_below",
                        with([](sandbox_settings& s) { s.workspace_bytes = 1024; }),
                        {},
                        "limits.workspace_bytes: must be at least 1048576"},
        refused_setting{"ttl_above",
                        with([](sandbox_settings& s) { s.ttl_s = 100000; }),
                        {},
                        "ttl_s 100000 is above this gateway's maximum of 86400"},
        refused_setting{"env_nul",
                        with([](sandbox_settings& s) { s.env["X"] = std::string("a\0b", 3); }),
                        {},
                        "env.set.X: must not contain NUL"},
        refused_setting{"program_dir",
                        {},
                        {{"/srv/../x", "/opt/sandgate/programs/0"}},
                        "mounts[0].source: must be an absolute path without . or .."}),
    [](const auto& test) { return std::string(test.param.name); });

TEST(sandbox_policy_builder, ttl_within_the_operators) {
  scratch_dir dir;
  const sandbox_policy_builder builder(dir.write("operator.json", R"({"ttl_s": 3600})"));
  EXPECT_FALSE(builder.check_ttl(3600));
  EXPECT_FALSE(builder.check_ttl(1));
  const auto e = builder.check_ttl(3601);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, fault::invalid);
  EXPECT_EQ(e->message, "ttl_s 3601 is above this gateway's maximum of 3600");
}

TEST(sandbox_policy_builder, program_binds_are_the_kernel_dirs_outside_the_system_dirs) {
  scratch_dir dir;
  const auto specs = dir.path() / "kernels";
  const auto programs = dir.path() / "build" / "bin";
  fs::create_directories(programs);
  dir.write("kernels/built/kernel.json", json({{"argv", {(programs / "sandgate-python").string()}}}).dump());
  dir.write("kernels/built-too/kernel.json",
            json({{"argv", {(programs / "sandgate-shell").string()}}}).dump());
  dir.write("kernels/system/kernel.json", R"({"argv": ["/usr/bin/python3", "-m", "ipykernel"]})");
  dir.write("kernels/on-path/kernel.json", R"({"argv": ["python3"]})");
  dir.write("kernels/gone/kernel.json", json({{"argv", {(dir.path() / "gone" / "k").string()}}}).dump());
  const kernelspec_catalog catalog({specs});
  ASSERT_EQ(catalog.all().size(), 5u);
  EXPECT_EQ(program_binds(catalog),
            (std::map<std::string, std::string>{{programs.string(), "/opt/sandgate/programs/0"}}));
}

}  // namespace
}  // namespace sandgate::gateway
