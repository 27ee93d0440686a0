#include <gateway/log.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace sandgate::gateway {
namespace {

using nlohmann::json;

// Runs `f` and returns the lines it wrote to stderr.
template <typename F>
std::vector<std::string> stderr_lines(F f) {
  ::testing::internal::CaptureStderr();
  f();
  std::istringstream in(::testing::internal::GetCapturedStderr());
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

class log_test : public ::testing::Test {
 protected:
  void TearDown() override { log::set_min_level(log::level::info); }
};

TEST_F(log_test, one_json_object_per_line_with_time_level_event_and_fields) {
  log::set_min_level(log::level::debug);
  const auto lines = stderr_lines([] {
    log::info("kernel_ready", {{"kernel_id", "k-1"}, {"kernel_name", "python3"}});
    log::warn("w");
    log::error("e", {{"error", "boom"}});
    log::debug("d");
  });
  ASSERT_EQ(lines.size(), 4u);
  const auto first = json::parse(lines[0]);
  EXPECT_EQ(first["event"], "kernel_ready");
  EXPECT_EQ(first["level"], "info");
  EXPECT_EQ(first["kernel_id"], "k-1");
  EXPECT_EQ(first["kernel_name"], "python3");
  EXPECT_TRUE(std::regex_match(first["time"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
      << first["time"];
  EXPECT_EQ(json::parse(lines[1])["level"], "warn");
  EXPECT_EQ(json::parse(lines[2])["level"], "error");
  EXPECT_EQ(json::parse(lines[2])["error"], "boom");
  EXPECT_EQ(json::parse(lines[3])["level"], "debug");
}

TEST_F(log_test, min_level_filters) {
  log::set_min_level(log::level::warn);
  const auto lines = stderr_lines([] {
    log::debug("d");
    log::info("i");
    log::warn("w");
    log::error("e");
  });
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(json::parse(lines[0])["event"], "w");
  EXPECT_EQ(json::parse(lines[1])["event"], "e");
  log::set_min_level(log::level::info);
  EXPECT_EQ(stderr_lines([] { log::debug("d"); }).size(), 0u);
}

TEST_F(log_test, hostile_field_text_stays_on_one_valid_line) {
  const std::string nasty =
      "quote\" backslash\\ newline\n cr\r tab\t nul" + std::string(1, '\0') + " bad utf8 \xff\xfe end";
  const auto lines = stderr_lines([&] { log::warn("auth_failed", {{"target", nasty}, {"why", "missing"}}); });
  ASSERT_EQ(lines.size(), 1u);
  const auto j = json::parse(lines[0]);
  const auto target = j["target"].get<std::string>();
  EXPECT_EQ(target.rfind("quote\" backslash\\ newline\n cr\r tab\t nul", 0), 0u) << target;
  EXPECT_NE(target.find(" end"), std::string::npos);
  EXPECT_EQ(j["why"], "missing");
}

}  // namespace
}  // namespace sandgate::gateway
