#include "sandboxing/cgroups.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sandboxing/sys_error.hpp"

namespace sb = sandgate::sandboxing;
namespace fs = std::filesystem;

namespace {

struct temp_dir {
  fs::path path;
  temp_dir() {
    char pattern[] = "/tmp/sandgate-cgroup-test-XXXXXX";
    path = ::mkdtemp(pattern);
  }
  ~temp_dir() { fs::remove_all(path); }
  void file(const std::string& name, const std::string& content) const {
    fs::create_directories((path / name).parent_path());
    std::ofstream(path / name) << content;
  }
};

}  // namespace

TEST(cgroups, oom_kill_count_from_v2_memory_events) {
  EXPECT_EQ(sb::parse_oom_kill_count("low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n"), 2u);
}

TEST(cgroups, oom_kill_count_from_v1_oom_control) {
  EXPECT_EQ(sb::parse_oom_kill_count("oom_kill_disable 0\nunder_oom 0\noom_kill 5\n"), 5u);
  EXPECT_EQ(sb::parse_oom_kill_count("oom_kill_disable 0\nunder_oom 0\n"), 0u);
}

TEST(cgroups, detects_v2_by_its_controllers) {
  temp_dir root;
  root.file("cgroup.controllers", "cpuset cpu io memory pids\n");
  EXPECT_EQ(sb::detect_cgroups(root.path).version, sb::cgroup_version::v2);
}

TEST(cgroups, detects_v1_hierarchies) {
  temp_dir root;
  root.file("memory/memory.limit_in_bytes", "");
  root.file("pids/cgroup.procs", "");
  root.file("unified/cgroup.controllers", "");
  EXPECT_EQ(sb::detect_cgroups(root.path).version, sb::cgroup_version::v1);
}

TEST(cgroups, v2_without_memory_or_pids_controller_is_partial) {
  for (const char* controllers : {"cpu pids\n", "cpuset cpu io memory\n", "hugetlb\n", ""}) {
    temp_dir root;
    root.file("cgroup.controllers", controllers);
    const auto layout = sb::detect_cgroups(root.path);
    EXPECT_EQ(layout.version, sb::cgroup_version::v2) << controllers;
    EXPECT_TRUE(layout.partial) << controllers;
  }
  temp_dir full;
  full.file("cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
  EXPECT_FALSE(sb::detect_cgroups(full.path).partial);
}

TEST(cgroups, v1_hierarchies_win_over_a_partial_v2_at_the_same_root) {
  temp_dir root;
  root.file("cgroup.controllers", "hugetlb\n");
  root.file("memory/memory.limit_in_bytes", "");
  root.file("pids/cgroup.procs", "");
  const auto layout = sb::detect_cgroups(root.path);
  EXPECT_EQ(layout.version, sb::cgroup_version::v1);
  EXPECT_FALSE(layout.partial);
}

TEST(cgroups, nothing_is_none) {
  temp_dir root;
  EXPECT_EQ(sb::detect_cgroups(root.path).version, sb::cgroup_version::none);
}

TEST(cgroups, partial_v2_makes_the_cgroup_without_the_missing_limits) {
  // A plain directory stands in for the hierarchy: only the files a partial
  // v2 cgroup needs exist, so any attempt to write a limit of a missing
  // controller would fail with ENOENT.
  temp_dir root;
  root.file("cgroup.controllers", "cpuset hugetlb\n");
  root.file("cgroup.subtree_control", "");
  root.file("sandgate/cgroup.subtree_control", "");
  const auto layout = sb::detect_cgroups(root.path);
  ASSERT_TRUE(layout.partial);
  {
    auto group = sb::cgroup::create(layout, "sandgate", "box", sb::limits{});
    ASSERT_EQ(group.dirs(), std::vector<std::string>{(root.path / "sandgate/box").string()});
    EXPECT_TRUE(fs::is_directory(root.path / "sandgate/box"));
    EXPECT_EQ(group.tracking_dir(), (root.path / "sandgate/box").string());
    EXPECT_FALSE(group.open_oom_counter()) << "no memory.events without the memory controller";
    // the supervisor's per-child cgroups below it go with it
    fs::create_directories(root.path / "sandgate/box/c1");
  }
  EXPECT_FALSE(fs::exists(root.path / "sandgate/box"));
  EXPECT_TRUE(fs::is_directory(root.path / "sandgate"));
  // "cpuset" is not "cpu": no cpu.max was attempted
  std::ifstream in(root.path / "cgroup.subtree_control");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "");
}

TEST(cgroups, v2_enables_cpu_even_when_cpuset_is_enabled) {
  // "cpuset" once passed for "cpu" (a substring match): cpu was never enabled,
  // and writing cpu.max then failed the sandbox's start.
  temp_dir root;
  root.file("cgroup.controllers", "cpuset cpu io memory pids\n");
  root.file("cgroup.subtree_control", "cpuset memory pids\n");
  root.file("sandgate/cgroup.subtree_control", "cpuset memory pids\n");
  EXPECT_THROW(sb::cgroup::create(sb::detect_cgroups(root.path), "sandgate", "box", sb::limits{}),
               sb::sys_error);  // a plain directory has no memory.max
  for (const char* file : {"cgroup.subtree_control", "sandgate/cgroup.subtree_control"}) {
    std::ifstream in(root.path / file);
    const std::string text(std::istreambuf_iterator<char>(in), {});
    EXPECT_EQ(text.substr(0, 4), "+cpu") << file << ": " << text;  // written over the plain file's start
  }
}

TEST(cgroups, full_v2_fails_when_a_limit_cannot_be_written) {
  temp_dir root;
  root.file("cgroup.controllers", "memory pids\n");
  root.file("cgroup.subtree_control", "memory pids\n");
  root.file("sandgate/cgroup.subtree_control", "memory\n");
  const auto layout = sb::detect_cgroups(root.path);
  ASSERT_FALSE(layout.partial);
  // enabling +pids in sandgate/cgroup.subtree_control "works" on a plain file,
  // then writing box/memory.max fails: the error names the file
  EXPECT_THROW(sb::cgroup::create(layout, "sandgate", "box", sb::limits{}), sb::sys_error);
  EXPECT_FALSE(fs::exists(root.path / "sandgate/box"));
}

TEST(cgroups, v2_enables_controllers_and_names_the_file_it_cannot_write) {
  temp_dir root;
  root.file("cgroup.controllers", "cpu memory pids\n");
  root.file("cgroup.subtree_control", "cpu memory pids\n");
  root.file("sandgate/cgroup.subtree_control", "memory pids cpu\n");
  const auto layout = sb::detect_cgroups(root.path);
  try {
    sb::cgroup::create(layout, "sandgate", "box", sb::limits{});
    FAIL() << "a plain directory has no memory.max";
  } catch (const sb::sys_error& e) {
    EXPECT_NE(std::string(e.what()).find("sandgate/box/memory.max"), std::string::npos) << e.what();
  }
}

TEST(cgroups, v1_uses_each_controller_under_the_parent_and_cleans_up_on_failure) {
  temp_dir root;
  root.file("memory/memory.limit_in_bytes", "");
  root.file("pids/cgroup.procs", "");
  root.file("cpu/cgroup.procs", "");
  const auto layout = sb::detect_cgroups(root.path);
  try {
    sb::cgroup::create(layout, "sandgate", "box", sb::limits{});
    FAIL() << "a plain directory has no memory.limit_in_bytes";
  } catch (const sb::sys_error& e) {
    EXPECT_NE(std::string(e.what()).find("memory/sandgate/box/memory.limit_in_bytes"), std::string::npos)
        << e.what();
  }
  // a cgroup that could not be set up is removed again
  EXPECT_TRUE(fs::is_directory(root.path / "pids/sandgate"));
  EXPECT_FALSE(fs::exists(root.path / "pids/sandgate/box"));
  EXPECT_FALSE(fs::exists(root.path / "cpu/sandgate/box"));
}
