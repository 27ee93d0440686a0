#include "process_spec.hpp"

#include "sandbox_settings.hpp"

#include <gateway/ids.hpp>
#include <jupyter_protocol/message.hpp>
#include <sandboxing/control_protocol.hpp>

#include <csignal>
#include <set>

namespace sandgate::gateway {
using json = nlohmann::json;

namespace {

constexpr std::size_t max_env_entries = 256;
constexpr double max_timeout_s = 366.0 * 24 * 3600;

// The signals a client may name, as `kill -l` names them.
const std::map<std::string, int>& signal_names() {
  static const std::map<std::string, int> names = {
      {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"KILL", SIGKILL}, {"USR1", SIGUSR1},
      {"USR2", SIGUSR2}, {"PIPE", SIGPIPE}, {"ALRM", SIGALRM}, {"TERM", SIGTERM}, {"CONT", SIGCONT},
      {"STOP", SIGSTOP}, {"TSTP", SIGTSTP}, {"TTIN", SIGTTIN}, {"TTOU", SIGTTOU}, {"WINCH", SIGWINCH},
  };
  return names;
}

std::optional<std::string> iso_ms(const json& ms) {
  if (!ms.is_number_integer()) return std::nullopt;
  return protocol::iso8601(
      std::chrono::system_clock::time_point(std::chrono::milliseconds(ms.get<std::int64_t>())));
}

json stream_model(const json& s) {
  return {{"bytes", s.value("bytes", 0)}, {"held", s.value("held", 0)}, {"dropped", s.value("dropped", 0)}};
}

}  // namespace

std::optional<process_start> parse_process_start(const json& body, const sandbox_entry& s,
                                                 domain_error& err) {
  auto invalid = [&](std::string message) {
    err = {fault::invalid, std::move(message)};
    return std::nullopt;
  };
  static const std::set<std::string> known = {"cmd", "cwd",       "env",         "stdin",
                                              "pty", "timeout_s", "buffer_bytes"};
  for (const auto& [k, v] : body.items())
    if (!known.contains(k)) return invalid("Unknown field \"" + k + "\"");
  process_start start;
  std::vector<std::string> argv;
  const auto& cmd = body.value("cmd", json());
  if (cmd.is_string() && !cmd.get_ref<const std::string&>().empty()) {
    start.cmd = cmd.get<std::string>();
    argv = {"/bin/bash", "-lc", start.cmd};
  } else if (cmd.is_array() && !cmd.empty()) {
    for (const auto& a : cmd) {
      if (!a.is_string()) return invalid("\"cmd\" array items must be strings");
      argv.push_back(a.get<std::string>());
    }
  } else {
    return invalid("\"cmd\" must be a non-empty string or argv array");
  }
  for (const auto& a : argv)
    if (a.find('\0') != std::string::npos) return invalid("\"cmd\" must not contain NUL bytes");
  const std::string workspace = s.box->workspace_inside();
  std::string cwd = workspace;
  if (const auto& c = body.value("cwd", json()); !c.is_null()) {
    if (!c.is_string() || c.get_ref<const std::string&>().empty())
      return invalid("\"cwd\" must be a non-empty string");
    cwd = c.get<std::string>();
    if (cwd.find('\0') != std::string::npos) return invalid("\"cwd\" must not contain NUL bytes");
    if (cwd.front() != '/') cwd = workspace + "/" + cwd;  // relative: to the workspace
  }
  json env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"LANG", "C.UTF-8"}, {"HOME", workspace}};
  for (const auto& [k, v] : s.env)
    env[k] = v;
  json streams = {{"buffer_bytes", default_process_buffer_bytes}, {"stdin", false}};
  if (const auto& in = body.value("stdin", json()); !in.is_null()) {
    if (!in.is_boolean()) return invalid("\"stdin\" must be true or false");
    streams["stdin"] = in.get<bool>();
  }
  if (const auto& pty = body.value("pty", json()); !pty.is_null() && pty != false) {
    const json size = pty == true ? json::object() : pty;
    if (!size.is_object()) return invalid("\"pty\" must be an object {\"cols\", \"rows\"}");
    for (const auto& [k, v] : size.items())
      if (k != "cols" && k != "rows") return invalid("\"pty\": unknown field \"" + k + "\"");
    const json cols = size.value("cols", json(80));
    const json rows = size.value("rows", json(24));
    if (!valid_terminal_size(cols) || !valid_terminal_size(rows))
      return invalid("\"pty\": cols and rows must be integers from 1 to 10000");
    streams["pty"] = {{"cols", cols}, {"rows", rows}};
    streams["stdin"] = true;
    env["TERM"] = "xterm-256color";  // a terminal says what it is; the request's env may say otherwise
  }
  if (const auto& e = body.value("env", json()); !e.is_null()) {
    if (!e.is_object() || e.size() > max_env_entries)
      return invalid("\"env\" must be an object of at most 256 strings");
    for (const auto& [k, v] : e.items()) {
      if (!is_env_name(k) || !v.is_string() ||
          v.get_ref<const std::string&>().find('\0') != std::string::npos)
        return invalid("\"env\": bad entry \"" + k + "\"");
      env[k] = v;
    }
  }
  if (const auto& b = body.value("buffer_bytes", json()); !b.is_null()) {
    if (!b.is_number_unsigned() || b.get<std::uint64_t>() == 0 ||
        b.get<std::uint64_t>() > sandboxing::control::max_stream_buffer_bytes)
      return invalid("\"buffer_bytes\" must be an integer from 1 to 67108864 (64 MiB)");
    streams["buffer_bytes"] = b;
  }
  start.id = "p" + random_hex(8);
  start.op = {{"op", "spawn"}, {"id", start.id}, {"argv", argv},
              {"env", env},    {"cwd", cwd},     {"streams", streams}};
  if (const auto& t = body.value("timeout_s", json()); !t.is_null()) {
    if (!t.is_number() || !(t.get<double>() > 0) || t.get<double>() > max_timeout_s)
      return invalid("\"timeout_s\" must be a positive number of seconds (at most a year)");
    start.op["timeout_ms"] = static_cast<std::uint64_t>(t.get<double>() * 1000);
  }
  return start;
}

std::optional<int> signal_number(const json& value) {
  if (value.is_number_integer()) {
    const auto n = value.get<std::int64_t>();
    if (n >= 1 && n < NSIG) return static_cast<int>(n);
    return std::nullopt;
  }
  if (!value.is_string()) return std::nullopt;
  std::string name = value.get<std::string>();
  for (auto& c : name)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (name.starts_with("SIG")) name.erase(0, 3);
  const auto it = signal_names().find(name);
  if (it == signal_names().end()) return std::nullopt;
  return it->second;
}

bool valid_terminal_size(const json& value) {
  return value.is_number_integer() && value.get<std::int64_t>() >= 1 && value.get<std::int64_t>() <= 10000;
}

bool valid_process_id(const std::string& id) {
  if (id.size() != 17 || id[0] != 'p') return false;
  return id.find_first_not_of("0123456789abcdef", 1) == std::string::npos;
}

json process_model(const json& r) {
  const json& argv = r.value("argv", json::array());
  const bool from_cmd = argv.size() == 3 && argv[0] == "/bin/bash" && argv[1] == "-lc";
  const json exit = r.value("exit", json());
  json out = {{"id", r.value("id", "")},
              {"pid", r.value("pid", 0)},
              {"cmd", from_cmd ? argv[2] : json(nullptr)},
              {"argv", argv},
              {"cwd", r.value("cwd", "")},
              {"pty", r.value("pty", json())},
              {"stdin", r.value("stdin", false)},
              {"status", r.value("running", false) ? "running" : "exited"},
              {"exit_code", exit.is_object() ? exit.value("code", json()) : json(nullptr)},
              {"signal", exit.is_object() ? exit.value("signal", json()) : json(nullptr)},
              {"oom", exit.is_object() && exit.value("oom", false)},
              {"timed_out", exit.is_object() && exit.value("timed_out", false)},
              {"started", iso_ms(r.value("started_ms", json())).value_or("")},
              {"ended", iso_ms(r.value("ended_ms", json())) ? json(*iso_ms(r.value("ended_ms", json())))
                                                            : json(nullptr)},
              {"buffer_bytes", r.value("buffer_bytes", 0)},
              {"stdout", stream_model(r.value("stdout", json::object()))},
              {"stderr", stream_model(r.value("stderr", json::object()))},
              {"attachments", r.value("attachments", 0)}};
  return out;
}

}  // namespace sandgate::gateway
