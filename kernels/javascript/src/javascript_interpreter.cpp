#include "javascript_interpreter.hpp"

#include <utility>
#include <vector>

#include <xeus/xhelper.hpp>

#include "sandgate_kernels/error_reply.hpp"

namespace sandgate::javascript_kernel {
namespace {

using kernels::error_reply;

std::string string_of(const nl::json& frame, const char* key, const std::string& fallback = "") {
  const auto it = frame.find(key);
  return it != frame.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::vector<std::string> lines_of(const nl::json& frame, const char* key) {
  std::vector<std::string> lines;
  if (const auto it = frame.find(key); it != frame.end() && it->is_array()) {
    for (const auto& line : *it) {
      if (line.is_string()) {
        lines.push_back(line.get<std::string>());
      }
    }
  }
  return lines;
}

}  // namespace

javascript_interpreter::javascript_interpreter(language lang, node_options options)
    : language_(lang), options_(std::move(options)) {
  options_.language = lang == language::typescript ? "typescript" : "javascript";
}

javascript_interpreter::~javascript_interpreter() {
  node_.reset();
}

void javascript_interpreter::configure_impl() {
  node_version_ = string_of(node().ready(), "node");
}

node_process& javascript_interpreter::node() {
  return node_.running(options_);
}

void javascript_interpreter::interrupt() noexcept {
  node_.interrupt();
}

nl::json javascript_interpreter::execute_request_impl(int execution_counter, const std::string& code,
                                                      bool silent, bool /*store_history*/,
                                                      nl::json /*user_expressions*/, bool /*allow_stdin*/) {
  node_process& js = node();
  const long id = ++next_id_;
  const kernels::output_handler publish = [this, silent](kernels::output_stream stream,
                                                         std::string_view text) {
    if (!silent) {
      publish_stream(stream == kernels::output_stream::stderr_stream ? "stderr" : "stdout",
                     std::string(text));
    }
  };
  nl::json done;
  wait_end end = wait_end::exited;
  if (js.send({{"type", "execute"}, {"id", id}, {"code", code}, {"count", execution_counter}})) {
    end = js.wait(
        [&](nl::json& frame) {
          const std::string type = string_of(frame, "type");
          if (type == "display") {
            if (!silent && frame["data"].is_object()) {
              const nl::json metadata =
                  frame["metadata"].is_object() ? frame["metadata"] : nl::json::object();
              display_data(std::move(frame["data"]), metadata, nl::json::object());
            }
            return false;
          }
          if (type == "done" && frame.value("id", -1L) == id) {
            done = std::move(frame);
            return true;
          }
          return false;
        },
        publish);
  } else {
    js.wait([](nl::json&) { return false; }, publish);  // collect the exit status
  }

  std::string ename;
  std::string evalue;
  std::vector<std::string> traceback;
  if (end == wait_end::killed_after_interrupt) {
    ename = "Interrupted";
    evalue = "execution interrupted; Node did not stop and was restarted: the cells' state is lost";
    traceback = {"Interrupted: " + evalue};
  } else if (end == wait_end::exited) {
    ename = "NodeExited";
    evalue = std::to_string(js.exit_status());
    traceback = {"node exited with status " + evalue + "; the next cell starts a new Node"};
  } else if (string_of(done, "status") != "ok") {
    ename = string_of(done, "ename", "Error");
    evalue = string_of(done, "evalue");
    traceback = lines_of(done, "traceback");
  } else {
    if (!silent && done["result"].is_object()) {
      publish_execution_result(execution_counter, std::move(done["result"]), nl::json::object());
    }
    return xeus::create_successful_reply();
  }
  if (!silent) {
    publish_execution_error(ename, evalue, traceback);
  }
  return error_reply(ename, evalue, traceback);
}

nl::json javascript_interpreter::ask(nl::json command, const std::string& answer_type) {
  node_process& js = node();
  const long id = ++next_id_;
  command["id"] = id;
  nl::json answer;
  if (!js.send(command)) {
    return answer;
  }
  const kernels::output_handler publish = [this](kernels::output_stream stream, std::string_view text) {
    publish_stream(stream == kernels::output_stream::stderr_stream ? "stderr" : "stdout", std::string(text));
  };
  js.wait(
      [&](nl::json& frame) {
        if (string_of(frame, "type") == answer_type && frame.value("id", -1L) == id) {
          answer = std::move(frame);
          return true;
        }
        return false;
      },
      publish);
  return answer;
}

nl::json javascript_interpreter::complete_request_impl(const std::string& code, int cursor_pos) {
  const nl::json answer = ask({{"type", "complete"}, {"code", code}, {"cursor", cursor_pos}}, "completion");
  if (!answer.is_object() || !answer["matches"].is_array()) {
    return xeus::create_complete_reply(nl::json::array(), cursor_pos, cursor_pos);
  }
  return xeus::create_complete_reply(answer["matches"], answer.value("cursor_start", cursor_pos),
                                     answer.value("cursor_end", cursor_pos));
}

nl::json javascript_interpreter::inspect_request_impl(const std::string& code, int cursor_pos,
                                                      int detail_level) {
  const nl::json answer =
      ask({{"type", "inspect"}, {"code", code}, {"cursor", cursor_pos}, {"detail_level", detail_level}},
          "inspection");
  if (!answer.is_object() || !answer.value("found", false) || !answer["data"].is_object()) {
    return xeus::create_inspect_reply(false);
  }
  return xeus::create_inspect_reply(true, answer["data"]);
}

nl::json javascript_interpreter::is_complete_request_impl(const std::string& code) {
  const nl::json answer = ask({{"type", "is_complete"}, {"code", code}}, "is_complete");
  if (!answer.is_object()) {
    return xeus::create_is_complete_reply("unknown", "");
  }
  return xeus::create_is_complete_reply(string_of(answer, "status", "unknown"), string_of(answer, "indent"));
}

nl::json javascript_interpreter::kernel_info_request_impl() {
  const bool ts = language_ == language::typescript;
  const std::string name = ts ? "typescript" : "javascript";
  nl::json info =
      xeus::create_info_reply("5.3", "sandgate-javascript", SANDGATE_VERSION, name, node_version_,
                              ts ? "text/typescript" : "text/javascript", ts ? ".ts" : ".js", name,
                              ts ? "typescript" : "javascript", "script",
                              std::string(ts ? "Sandgate TypeScript kernel" : "Sandgate JavaScript kernel") +
                                  " (Node " + node_version_ + ")");
  info["language_info"]["codemirror_mode"] =
      ts ? nl::json{{"name", "javascript"}, {"typescript", true}} : nl::json("javascript");
  return info;
}

void javascript_interpreter::shutdown_request_impl() {
  // On the control thread, maybe while a cell runs on the main thread: end
  // Node so that the cell returns and the shell loop can stop; the
  // node_process itself is destroyed on the main thread.
  node_.kill();
}

}  // namespace sandgate::javascript_kernel
