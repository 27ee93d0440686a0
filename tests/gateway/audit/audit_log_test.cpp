#include "audit/audit_log.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace sandgate::gateway {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

class audit_log_test : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sandgate-audit-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> lines() const {
    std::ifstream in(dir_ / "audit.log");
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);)
      out.push_back(line);
    return out;
  }

  fs::path dir_;
};

// The time, which varies, cut out of a line.
ojson without_time(const std::string& line) {
  const auto j = ojson::parse(line);
  EXPECT_TRUE(j.begin().key() == "time" && j.begin()->is_string());
  auto rest = j;
  rest.erase("time");
  return rest;
}

TEST_F(audit_log_test, a_line_is_time_event_principal_then_the_fields_in_order) {
  audit_log log(dir_ / "audit.log");
  log.record("execute", std::string("alice"),
             ojson{{"kernel_id", "k1"}, {"code_sha256", nullptr}, {"duration_ms", 12}, {"ok", true}});
  log.record("auth.failure", std::nullopt);
  log.record("odd", std::string("bob"), ojson{{"a", "\xff"}, {"event", "renamed"}});
  const auto got = lines();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(
      without_time(got[0]),
      ojson::parse(
          R"({"event":"execute","principal":"alice","kernel_id":"k1","code_sha256":null,"duration_ms":12,"ok":true})"));
  EXPECT_EQ(without_time(got[1]), ojson::parse(R"({"event":"auth.failure","principal":null})"));
  // Invalid UTF-8 is replaced; a field that names a head member replaces it in place.
  EXPECT_EQ(without_time(got[2]), ojson::parse(R"({"event":"renamed","principal":"bob","a":"\ufffd"})"));
  EXPECT_EQ(got[0].rfind(R"({"time":")", 0), 0u);
}

}  // namespace
}  // namespace sandgate::gateway
