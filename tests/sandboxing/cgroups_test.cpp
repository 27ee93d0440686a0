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

TEST(cgroups, v2_without_memory_controller_is_not_enough) {
  temp_dir root;
  root.file("cgroup.controllers", "cpu pids\n");
  EXPECT_EQ(sb::detect_cgroups(root.path).version, sb::cgroup_version::none);
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
