// sandgate-sandbox --check-policy FILE, the program of this build run for
// real: the supervisor's parser, defaults and validator. It prints the policy
// with every default filled in, or the error naming the field.
#pragma once

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <cstdio>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace sandgate::gateway {

struct program_result {
  int status = -1;     // the exit code, or -1 when a signal ended it
  std::string output;  // stdout and stderr
};

inline program_result check_policy(const std::filesystem::path& file) {
  const std::string command =
      std::string("'") + SANDGATE_SANDBOX_PROGRAM + "' --check-policy '" + file.string() + "' 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen " + command + " failed");
  program_result r;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    r.output.append(buffer, n);
  const int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// What the supervisor reads from `file`, which must be a valid policy.
inline nlohmann::json supervisor_reads(const std::filesystem::path& file) {
  const auto r = check_policy(file);
  EXPECT_EQ(r.status, 0) << r.output;
  return nlohmann::json::parse(r.output, nullptr, false);
}

}  // namespace sandgate::gateway
