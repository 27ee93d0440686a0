#include "sandgate_kernels/command_line.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace sandgate::kernels {
namespace {

kernel_options parse(std::vector<const char*> args) {
  args.insert(args.begin(), "kernel");
  return parse_command_line(static_cast<int>(args.size()), args.data());
}

TEST(command_line, connection_file_and_preload) {
  const auto options = parse({"-f", "/run/k.json", "--preload", "numpy,pandas,,matplotlib"});
  EXPECT_EQ(options.connection_file, "/run/k.json");
  const std::vector<std::string> expected{"numpy", "pandas", "matplotlib"};
  EXPECT_EQ(options.preload_modules, expected);
}

TEST(command_line, equals_forms_and_repeats) {
  const auto options = parse({"--connection-file=/k.json", "--preload=a", "--preload", "b"});
  EXPECT_EQ(options.connection_file, "/k.json");
  const std::vector<std::string> expected{"a", "b"};
  EXPECT_EQ(options.preload_modules, expected);
}

TEST(command_line, language) {
  EXPECT_EQ(parse({"-f", "k.json"}).language, "");
  EXPECT_EQ(parse({"-f", "k.json", "--language", "typescript"}).language, "typescript");
  EXPECT_EQ(parse({"--language=javascript", "-f", "k.json"}).language, "javascript");
  EXPECT_THROW(parse({"-f", "k.json", "--language"}), std::invalid_argument);
}

TEST(command_line, help_and_version_need_no_connection_file) {
  EXPECT_TRUE(parse({"--help"}).show_help);
  EXPECT_TRUE(parse({"--version"}).show_version);
}

TEST(command_line, rejects_bad_arguments) {
  EXPECT_THROW(parse({}), std::invalid_argument);
  EXPECT_THROW(parse({"-f"}), std::invalid_argument);
  EXPECT_THROW(parse({"-f", "k.json", "--bogus"}), std::invalid_argument);
}

}  // namespace
}  // namespace sandgate::kernels
