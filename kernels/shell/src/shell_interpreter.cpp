#include "shell_interpreter.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include <xeus/xhelper.hpp>

#include "completion.hpp"
#include "sandgate_kernels/error_reply.hpp"
#include "sandgate_kernels/utf8_chunker.hpp"
#include "syntax_check.hpp"

namespace sandgate::shell_kernel {
namespace {

using kernels::error_reply;
using kernels::utf8_chunker;

constexpr std::size_t max_completion_matches = 1000;

std::string make_private_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/sandgate-shell-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {
    throw std::runtime_error("mkdtemp(" + pattern + ") failed");
  }
  return buffer.data();
}

std::string trim_newlines(std::string text) {
  while (!text.empty() && text.back() == '\n') {
    text.pop_back();
  }
  return text;
}

}  // namespace

shell_interpreter::shell_interpreter() {
  const char* bash_env = std::getenv("SANDGATE_SHELL_BASH");
  bash_path_ = (bash_env != nullptr && *bash_env != '\0') ? bash_env : "/bin/bash";
}

shell_interpreter::~shell_interpreter() {
  bash_.reset();  // EOF, SIGHUP, then reap
  std::error_code ignored;
  std::filesystem::remove_all(cell_dir_, ignored);
}

void shell_interpreter::configure_impl() {
  cell_dir_ = make_private_dir();
  cell_file_ = cell_dir_ + "/cell.sh";
  bash_version_ = trim_newlines(capture("printf '%s\\n' \"${BASH_VERSION%%(*}\""));
}

bash_process& shell_interpreter::shell() {
  return bash_.running();
}

void shell_interpreter::interrupt() noexcept {
  bash_.interrupt();
}

std::string shell_interpreter::capture(const std::string& command_line) {
  std::string out;
  shell().run(command_line, [&out](output_stream stream, std::string_view bytes) {
    if (stream == output_stream::stdout_stream) {
      out.append(bytes);
    }
  });
  return out;
}

nl::json shell_interpreter::execute_request_impl(int /*execution_counter*/, const std::string& code,
                                                 bool silent, bool /*store_history*/,
                                                 nl::json /*user_expressions*/, bool /*allow_stdin*/) {
  {
    std::ofstream file(cell_file_, std::ios::binary | std::ios::trunc);
    file << code << '\n';
    if (!file) {
      return error_reply("OSError", "cannot write " + cell_file_, {});
    }
  }
  const auto publish = [&](output_stream stream, std::string_view text) {
    if (!silent) {
      publish_stream(stream == output_stream::stdout_stream ? "stdout" : "stderr", std::string(text));
    }
  };
  const command_result result =
      shell().run("eval \"$(< " + single_quote(cell_file_) + ")\" </dev/null", publish);

  if (result.shell_exited) {
    const std::string status = std::to_string(result.exit_status);
    const std::vector<std::string> trace{"bash exited with status " + status +
                                         "; the next cell starts a new shell"};
    if (!silent) {
      publish_execution_error("ShellExited", status, trace);
    }
    return error_reply("ShellExited", status, trace);
  }
  if (result.exit_status != 0) {
    const std::string status = std::to_string(result.exit_status);
    const std::vector<std::string> trace{"exit status " + status +
                                         (result.exit_status == 130 ? " (interrupted)" : "")};
    if (!silent) {
      publish_execution_error("ExitStatus", status, trace);
    }
    return error_reply("ExitStatus", status, trace);
  }
  return xeus::create_successful_reply();
}

nl::json shell_interpreter::complete_request_impl(const std::string& code, int cursor_pos) {
  const std::size_t cursor =
      cursor_pos < 0 ? code.size() : code_points_to_bytes(code, std::size_t(cursor_pos));
  const completion_query query = analyse_completion(code, cursor);
  nl::json matches = nl::json::array();
  const std::string listed = capture(compgen_line(query, max_completion_matches));
  std::size_t begin = 0;
  while (begin < listed.size()) {
    auto end = listed.find('\n', begin);
    if (end == std::string::npos) {
      end = listed.size();
    }
    if (end > begin) {
      utf8_chunker valid;
      matches.push_back(query.sigil + valid.feed(listed.substr(begin, end - begin)) + valid.finish());
    }
    begin = end + 1;
  }
  const auto start = bytes_to_code_points(code, query.start_bytes);
  const auto end = bytes_to_code_points(code, query.end_bytes);
  return xeus::create_complete_reply(matches, int(start), int(end));
}

nl::json shell_interpreter::inspect_request_impl(const std::string& /*code*/, int /*cursor_pos*/,
                                                 int /*detail_level*/) {
  return xeus::create_inspect_reply(false);
}

nl::json shell_interpreter::is_complete_request_impl(const std::string& code) {
  return xeus::create_is_complete_reply(to_string(check_syntax(code, bash_path_)), "");
}

nl::json shell_interpreter::kernel_info_request_impl() {
  nl::json info = xeus::create_info_reply("5.3", "sandgate-shell", SANDGATE_VERSION, "bash", bash_version_,
                                          "text/x-sh", ".sh", "bash", "shell", "",
                                          "Sandgate bash kernel (bash " + bash_version_ + ")");
  return info;
}

void shell_interpreter::shutdown_request_impl() {
  // Runs on the control thread, maybe while a cell runs on the main thread:
  // end bash's commands so that the cell returns and the shell loop can stop;
  // the bash_process itself is destroyed on the main thread.
  bash_.kill();
}

}  // namespace sandgate::shell_kernel
