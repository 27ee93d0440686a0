#include "sandboxing/spawn.hpp"

#include <gtest/gtest.h>

namespace sb = sandgate::sandboxing;

TEST(spawn, program_with_a_slash_is_used_as_is) {
  EXPECT_EQ(sb::resolve_program("./run", {}), "./run");
  EXPECT_EQ(sb::resolve_program("/bin/sh", {}), "/bin/sh");
}

TEST(spawn, program_is_looked_up_in_the_given_path) {
  EXPECT_EQ(sb::resolve_program("sh", {{"PATH", "/nonexistent:/bin"}}), "/bin/sh");
  EXPECT_EQ(sb::resolve_program("no-such-program-here", {{"PATH", "/bin"}}), "no-such-program-here");
}

TEST(spawn, empty_argv_is_refused) {
  EXPECT_THROW(sb::spawn_confined(sb::spawn_spec{}, sb::confinement{}), std::runtime_error);
}
