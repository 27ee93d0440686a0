#include "syntax_check.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <array>
#include <cerrno>
#include <csignal>

#include "sandgate_kernels/pipe.hpp"

extern char** environ;

namespace sandgate::shell_kernel {
namespace {

using kernels::make_pipe;
using kernels::pipe_pair;
using kernels::unique_fd;

bool ends_with_continuation(std::string_view code) {
  while (!code.empty() && (code.back() == '\n' || code.back() == '\r')) {
    code.remove_suffix(1);
  }
  std::size_t backslashes = 0;
  while (backslashes < code.size() && code[code.size() - 1 - backslashes] == '\\') {
    ++backslashes;
  }
  return backslashes % 2 == 1;
}

}  // namespace

completeness check_syntax(std::string_view code, const std::string& bash_path) {
  if (ends_with_continuation(code)) {
    return completeness::incomplete;
  }
  pipe_pair in;
  pipe_pair err;
  try {
    in = make_pipe();
    err = make_pipe();
  } catch (const std::system_error&) {
    return completeness::unknown;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.read_end.get(), STDIN_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, err.write_end.get(), STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);

  std::array<char*, 4> argv{const_cast<char*>(bash_path.c_str()), const_cast<char*>("--norc"),
                            const_cast<char*>("-n"), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, bash_path.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  in.read_end.reset();
  err.write_end.reset();
  if (rc != 0) {
    return completeness::unknown;
  }

  // bash -n may stop reading at the first error: EPIPE is fine (SIGPIPE is
  // ignored by the kernel). Its stderr is a line or two.
  std::string_view rest = code;
  while (!rest.empty()) {
    const ssize_t n = ::write(in.write_end.get(), rest.data(), rest.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  in.write_end.reset();

  std::string messages;
  std::array<char, 4096> buffer;
  for (;;) {
    const ssize_t n = ::read(err.read_end.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    messages.append(buffer.data(), static_cast<std::size_t>(n));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }

  if (messages.find("unexpected end of file") != std::string::npos ||
      messages.find("unexpected EOF") != std::string::npos ||
      messages.find("delimited by end-of-file") != std::string::npos) {
    return completeness::incomplete;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    return completeness::complete;
  }
  return completeness::invalid;
}

const char* to_string(completeness value) {
  switch (value) {
    case completeness::complete:
      return "complete";
    case completeness::incomplete:
      return "incomplete";
    case completeness::invalid:
      return "invalid";
    case completeness::unknown:
      break;
  }
  return "unknown";
}

}  // namespace sandgate::shell_kernel
