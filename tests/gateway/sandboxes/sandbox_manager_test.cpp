// The sandbox manager's reading of the operator's policy: a file it cannot
// use stops the gateway's start with the file and field named; and each
// sandbox it makes keeps (and shows, and enforces) the values its written
// policy gives the supervisor. Sandboxes here are host ones (no supervisor);
// sandboxed ones are tested end to end in tests/integration/test_sandboxes.py.
#include "sandboxes/sandbox_manager.hpp"

#include "check_policy.hpp"
#include "scratch_dir.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <string>

namespace sandgate::gateway {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr std::uint64_t mib = 1024 * 1024;

// A sandbox manager over a state dir of its own, with the operator's policy
// `policy_text`.
struct manager_harness {
  scratch_dir dir;
  boost::asio::io_context io;
  config cfg;
  kernelspec_catalog specs{std::vector<fs::path>{}};
  std::unique_ptr<registry> reg;

  explicit manager_harness(const std::string& policy_text) {
    cfg.state_dir = dir.path() / "state";
    cfg.host_id_lock_dir = dir.path() / "host-ids";
    cfg.policy_file = dir.write("operator.json", policy_text);
    fs::create_directories(cfg.state_dir);
    reg = registry::open(cfg.state_dir / "registry.db");
  }
  [[nodiscard]] sandbox_manager make() { return {io, cfg, specs, dir.path(), *reg}; }
};

// The error that stops the start with `policy_text` as the operator's
// policy, with the file's path written as FILE.
std::string start_error(const std::string& policy_text) {
  manager_harness h(policy_text);
  try {
    auto m = h.make();
  } catch (const config_error& e) {
    std::string what = e.what();
    if (const auto at = what.find(h.cfg.policy_file.string()); at != std::string::npos)
      what.replace(at, h.cfg.policy_file.string().size(), "FILE");
    return what;
  }
  return "";
}

TEST(sandbox_manager, an_operator_policy_it_cannot_use_stops_the_start) {
  EXPECT_EQ(start_error(R"({"limits": {"memory_bytes": 1}})"),
            "FILE: policy: limits.memory_bytes: must be at least 16777216");
  EXPECT_EQ(start_error(R"({"network": {"mode": "allow", "hosts": ["a b"]}})"),
            "FILE: policy: network.hosts[0]: \"a b\" is not a host name or \"*.\" followed by one");
  EXPECT_EQ(start_error("[]"), "FILE: policy: (document): must be an object");
  manager_harness h("{}");
  h.cfg.policy_file = h.dir.path() / "missing.json";
  try {
    auto m = h.make();
    ADD_FAILURE() << "started without a policy";
  } catch (const config_error& e) {
    EXPECT_EQ(std::string(e.what()), "policy: cannot read " + h.cfg.policy_file.string());
  }
}

TEST(sandbox_manager, a_sandbox_keeps_what_its_policy_gives_the_supervisor) {
  // No limits and no max_execution_s in the file: the typed defaults, as in the supervisor.
  manager_harness h(R"({"ttl_s": 3600, "network": "none"})");
  auto m = h.make();
  EXPECT_EQ(m.default_limits().memory_bytes, 2048 * mib);
  EXPECT_EQ(m.max_ttl_s(), 3600u);

  domain_error err;
  const auto plain = m.create({}, "alice", false, true, err);
  ASSERT_TRUE(plain) << err.message;
  sandbox_settings lowered;
  lowered.memory_bytes = 64 * mib;
  lowered.pids = 32;
  lowered.ttl_s = 60;
  const auto small = m.create(lowered, "alice", false, true, err);
  ASSERT_TRUE(small) << err.message;

  for (const auto& s : {plain, small}) {
    const auto file = h.cfg.state_dir / "policies" / (s->id + ".json");
    const json read = supervisor_reads(file);
    EXPECT_EQ(s->limits.memory_bytes, read["limits"]["memory_bytes"].get<std::uint64_t>());
    EXPECT_EQ(s->limits.cpu, read["limits"]["cpu"].get<double>());
    EXPECT_EQ(s->limits.pids, read["limits"]["pids"].get<std::uint64_t>());
    EXPECT_EQ(s->limits.workspace_bytes, read["limits"]["workspace_bytes"].get<std::uint64_t>());
    EXPECT_EQ(s->max_execution_s, read["max_execution_s"].get<std::uint64_t>());
    // The deadline rounds up to the next whole second.
    EXPECT_LE(s->expires_at, unix_now() + read["ttl_s"].get<std::int64_t>() + 1);
    EXPECT_GE(s->expires_at, unix_now() + read["ttl_s"].get<std::int64_t>() - 60);
  }
  EXPECT_EQ(plain->limits.memory_bytes, 2048 * mib);
  EXPECT_EQ(plain->max_execution_s, 600u);
  EXPECT_EQ(small->limits.memory_bytes, 64 * mib);
  EXPECT_EQ(small->limits.pids, 32u);

  m.destroy(small->id, "deleted");
  EXPECT_FALSE(fs::exists(h.cfg.state_dir / "policies" / (small->id + ".json")));
  EXPECT_EQ(m.gone(small->id), "deleted");
}

TEST(sandbox_manager, settings_that_break_the_policy_make_no_sandbox) {
  manager_harness h(R"({"limits": {"memory_bytes": 536870912}, "ttl_s": 3600})");
  auto m = h.make();
  sandbox_settings settings;
  settings.memory_bytes = 1024 * mib;
  domain_error err;
  EXPECT_FALSE(m.create(settings, "alice", false, true, err));
  EXPECT_EQ(err.kind, fault::invalid);
  EXPECT_EQ(err.message, "limits.memory_bytes 1073741824 is above this gateway's maximum of 536870912");
  settings = {};
  settings.ttl_s = 3601;
  EXPECT_FALSE(m.create(settings, "alice", false, true, err));
  EXPECT_EQ(err.message, "ttl_s 3601 is above this gateway's maximum of 3600");
  settings = {};
  settings.network = "open";
  EXPECT_FALSE(m.create(settings, "alice", false, true, err));
  EXPECT_EQ(err.kind, fault::forbidden);
  EXPECT_TRUE(m.list().empty());
  EXPECT_TRUE(!fs::exists(h.cfg.state_dir / "policies") || fs::is_empty(h.cfg.state_dir / "policies"));
}

}  // namespace
}  // namespace sandgate::gateway
