#include "sandgate_kernels/child_process.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <string>
#include <system_error>

#include "sandgate_kernels/child_output.hpp"
#include "sandgate_kernels/output_batcher.hpp"

namespace sandgate::kernels {
namespace {

using namespace std::chrono_literals;
constexpr auto to_child = child_pipe::direction::to_child;
constexpr auto from_child = child_pipe::direction::from_child;

// Reads the child's stdout and stderr until both are at end of file (5 s at most).
std::pair<std::string, std::string> read_to_end(child_output& output) {
  std::string out;
  std::string err;
  const output_handler handler = [&](output_stream stream, std::string_view text) {
    (stream == output_stream::stdout_stream ? out : err).append(text);
  };
  output_batcher batcher(handler);
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (output.poll_fd(output_stream::stdout_stream) >= 0 ||
         output.poll_fd(output_stream::stderr_stream) >= 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "the child's pipes did not reach end of file";
      break;
    }
    pollfd fds[2]{{output.poll_fd(output_stream::stdout_stream), POLLIN, 0},
                  {output.poll_fd(output_stream::stderr_stream), POLLIN, 0}};
    ::poll(fds, 2, 100);
    output.drain_both(batcher);
  }
  output.finish(batcher);
  batcher.flush_all();
  return {out, err};
}

TEST(child_process, pipes_at_the_fds_asked_for_and_the_exit_status) {
  child_process child(
      {"/bin/sh", "-c", "read line; echo \"got $line\"; echo oops >&2; echo side >&3; exit 7"},
      {{STDIN_FILENO, to_child}, {STDOUT_FILENO, from_child}, {STDERR_FILENO, from_child}, {3, from_child}});
  unique_fd in = child.take_pipe(STDIN_FILENO);
  unique_fd side = child.take_pipe(3);
  EXPECT_FALSE(child.take_pipe(3)) << "a pipe is taken once";
  EXPECT_FALSE(child.take_pipe(9)) << "no pipe at fd 9";
  child_output output(child.take_pipe(STDOUT_FILENO), child.take_pipe(STDERR_FILENO));
  ASSERT_TRUE(write_all(in.get(), "hello\n"));
  const auto [out, err] = read_to_end(output);
  EXPECT_EQ(out, "got hello\n");
  EXPECT_EQ(err, "oops\n");
  char buffer[16];
  EXPECT_EQ(read_available(side.get(), buffer, sizeof buffer), 5);
  EXPECT_EQ(std::string(buffer, 5), "side\n");
  EXPECT_TRUE(child.wait_exit(5s));
  EXPECT_FALSE(child.alive());
  EXPECT_EQ(child.exit_status(), 7);
  EXPECT_EQ(child.reap(), 7) << "a reaped child keeps its status";
}

// The mask bits of `field` ("SigBlk", "SigIgn") in a /proc/<pid>/status text.
unsigned long long signal_bits(const std::string& status, const std::string& field) {
  const auto at = status.find(field + ":\t");
  return at == std::string::npos ? ~0ULL : std::stoull(status.substr(at + field.size() + 2, 16), nullptr, 16);
}

TEST(child_process, stdin_is_dev_null_and_sigint_and_sigpipe_are_at_their_defaults) {
  // The kernels block SIGINT and ignore SIGPIPE; a child must do neither.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigset_t old_mask;
  pthread_sigmask(SIG_BLOCK, &set, &old_mask);
  const auto old_sigint = std::signal(SIGINT, SIG_IGN);
  const auto old_sigpipe = std::signal(SIGPIPE, SIG_IGN);
  child_process child({"/bin/sh", "-c", "cat; exec cat /proc/self/status"},
                      {{STDOUT_FILENO, from_child}, {STDERR_FILENO, from_child}});
  std::signal(SIGPIPE, old_sigpipe);
  std::signal(SIGINT, old_sigint);
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  child_output output(child.take_pipe(STDOUT_FILENO), child.take_pipe(STDERR_FILENO));
  const auto [out, err] = read_to_end(output);
  // The first cat read /dev/null (nothing, at once); the second shows its own signal state.
  EXPECT_EQ(signal_bits(out, "SigBlk"), 0u) << out;
  EXPECT_EQ(signal_bits(out, "SigIgn") & ((1ULL << (SIGINT - 1)) | (1ULL << (SIGPIPE - 1))), 0u) << out;
  EXPECT_EQ(err, "");
  EXPECT_TRUE(child.wait_exit(5s));
  EXPECT_EQ(child.exit_status(), 0);
}

TEST(child_process, a_signal_reaches_the_whole_group_and_reap_kills_it) {
  child_process child({"/bin/sh", "-c", "sleep 100 & echo started; wait"},
                      {{STDOUT_FILENO, from_child}, {STDERR_FILENO, from_child}});
  unique_fd out = child.take_pipe(STDOUT_FILENO);
  pollfd ready{out.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&ready, 1, 5000), 1);
  EXPECT_FALSE(child.wait_exit(50ms)) << "still running";
  child.signal_group(SIGTERM);  // sh waits: the signal ends it and its sleep
  EXPECT_TRUE(child.wait_exit(5s));
  EXPECT_EQ(child.exit_status(), 128 + SIGTERM);

  child_process sleeper({"sleep", "100"}, {});  // found in PATH
  EXPECT_TRUE(sleeper.alive());
  EXPECT_EQ(sleeper.reap(), 128 + SIGKILL);
  EXPECT_FALSE(sleeper.alive());
  sleeper.signal_group(SIGKILL);  // a no-op once reaped
}

TEST(child_process, a_missing_program_is_an_error_naming_it) {
  try {
    child_process child({"/nonexistent/sandgate-test-program"}, {});
    FAIL() << "spawned a missing program";
  } catch (const std::system_error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/sandgate-test-program"), std::string::npos)
        << error.what();
  }
}

TEST(child_output, cut_utf8_is_joined_and_a_cut_end_becomes_a_replacement) {
  // printf writes "é" (c3 a9) in two writes, then a lone c3 at the end.
  child_process child({"/bin/sh", "-c", "printf '\\303'; sleep 0.05; printf '\\251!\\303'"},
                      {{STDOUT_FILENO, from_child}, {STDERR_FILENO, from_child}});
  child_output output(child.take_pipe(STDOUT_FILENO), child.take_pipe(STDERR_FILENO));
  EXPECT_EQ(read_to_end(output).first, "\xc3\xa9!\xef\xbf\xbd");
}

}  // namespace
}  // namespace sandgate::kernels
