#include "sandboxing/mounts.hpp"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>

#include <filesystem>
#include <fstream>

#include "sandboxing/rootfs.hpp"
#include "sandboxing/sys_error.hpp"

namespace sb = sandgate::sandboxing;
namespace fs = std::filesystem;

TEST(mounts, flag_names_for_messages) {
  EXPECT_EQ(sb::mount_flag_names(MS_BIND | MS_RDONLY), "MS_RDONLY|MS_BIND");
  EXPECT_EQ(sb::mount_flag_names(0), "0");
}

TEST(mounts, make_dirs_and_files_create_parents) {
  char pattern[] = "/tmp/sandgate-mounts-test-XXXXXX";
  const fs::path root = ::mkdtemp(pattern);
  sb::make_dirs((root / "a/b/c").string());
  EXPECT_TRUE(fs::is_directory(root / "a/b/c"));
  sb::make_file((root / "x/y/file").string());
  EXPECT_TRUE(fs::is_regular_file(root / "x/y/file"));
  sb::write_new_file((root / "x/passwd").string(), "root:x:0:0\n", 0644);
  std::ifstream in(root / "x/passwd");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "root:x:0:0");
  fs::remove_all(root);
}

TEST(mounts, failed_step_names_the_call_and_path) {
  try {
    sb::bind_path("/nonexistent-sandgate-source", "/tmp/sandgate-never", true);
    FAIL();
  } catch (const sb::sys_error& e) {
    EXPECT_STREQ(e.what(), "stat(/nonexistent-sandgate-source): No such file or directory");
    EXPECT_EQ(e.error_number(), ENOENT);
  }
}

TEST(rootfs, generated_passwd_has_the_sandbox_user_and_no_host_users) {
  const auto files = sb::generated_etc_files(1000, 1001, "box");
  std::map<std::string, std::string> by_name(files.begin(), files.end());
  EXPECT_NE(by_name["passwd"].find("sandbox:x:1000:1001:"), std::string::npos);
  EXPECT_EQ(by_name["passwd"].find("/bin/bash\nnobody"), by_name["passwd"].find("/bin/bash"));
  EXPECT_NE(by_name["group"].find("sandbox:x:1001:"), std::string::npos);
  EXPECT_NE(by_name["hosts"].find("localhost box"), std::string::npos);
  EXPECT_EQ(by_name["hostname"], "box\n");
}

TEST(rootfs, etc_binds_leave_out_secrets) {
  for (const auto& name : sb::bound_etc_entries()) {
    EXPECT_NE(name, "shadow");
    EXPECT_NE(name, "gshadow");
    EXPECT_NE(name, "sudoers");
    EXPECT_NE(name, "passwd");
    EXPECT_NE(name, "environment");
  }
}
