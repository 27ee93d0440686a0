#include "sandboxing/control_protocol.hpp"

#include <stdexcept>

#include "sandboxing/base64.hpp"

namespace sandgate::sandboxing::control {
namespace {

using json = nlohmann::json;

class category : public std::error_category {
 public:
  const char* name() const noexcept override { return "sandgate.control"; }
  std::string message(int value) const override {
    switch (static_cast<frame_errc>(value)) {
      case frame_errc::frame_too_large:
        return "control frame larger than 1 MiB";
      case frame_errc::not_json:
        return "control frame is not JSON";
      case frame_errc::not_an_object:
        return "control frame is not a JSON object";
    }
    return "unknown control frame error";
  }
};

}  // namespace

const std::error_category& frame_category() noexcept {
  static const category instance;
  return instance;
}

std::string encode_frame(const json& message) {
  const std::string text = message.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > max_frame_bytes) throw std::length_error("control frame larger than 1 MiB");
  const auto n = static_cast<std::uint32_t>(text.size());
  std::string frame;
  frame.reserve(4 + text.size());
  frame.push_back(static_cast<char>(n >> 24));
  frame.push_back(static_cast<char>(n >> 16));
  frame.push_back(static_cast<char>(n >> 8));
  frame.push_back(static_cast<char>(n));
  frame += text;
  return frame;
}

void frame_decoder::feed(std::string_view bytes) {
  if (offset_ > 0 && offset_ == buffer_.size()) {
    buffer_.clear();
    offset_ = 0;
  }
  buffer_.append(bytes);
}

std::optional<json> frame_decoder::next(std::error_code& ec) {
  ec.clear();
  if (buffer_.size() - offset_ < 4) return std::nullopt;
  const auto* p = reinterpret_cast<const unsigned char*>(buffer_.data() + offset_);
  const std::uint32_t n =
      (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
  if (n > max_frame_bytes) {
    ec = frame_errc::frame_too_large;
    return std::nullopt;
  }
  if (buffer_.size() - offset_ - 4 < n) return std::nullopt;
  json message = json::parse(std::string_view(buffer_).substr(offset_ + 4, n), nullptr, false);
  offset_ += 4 + n;
  if (offset_ == buffer_.size()) {
    buffer_.clear();
    offset_ = 0;
  } else if (offset_ > 64 * 1024) {
    buffer_.erase(0, offset_);
    offset_ = 0;
  }
  if (message.is_discarded()) {
    ec = frame_errc::not_json;
    return std::nullopt;
  }
  if (!message.is_object()) {
    ec = frame_errc::not_an_object;
    return std::nullopt;
  }
  return message;
}

void to_json(json& j, const spawn_request& m) {
  j = {{"op", "spawn"}, {"req", m.req}, {"id", m.id}, {"argv", m.argv}, {"env", m.env}, {"cwd", m.cwd}};
  if (!m.log.empty()) j["log"] = m.log;
  if (m.capture) {
    j["capture"] = true;
    j["output_limit"] = m.output_limit_bytes;
  }
  if (m.stdin_data) j["stdin"] = base64_encode(*m.stdin_data);
  if (m.timeout_ms) j["timeout_ms"] = *m.timeout_ms;
  if (m.streams) {
    json streams = {{"buffer_bytes", m.streams->buffer_bytes}, {"stdin", m.streams->stdin}};
    if (m.streams->pty) streams["pty"] = {{"cols", m.streams->pty->first}, {"rows", m.streams->pty->second}};
    j["streams"] = std::move(streams);
  }
}

namespace {

// A count that must not be negative (nlohmann would wrap -1 into 2^64-1).
std::uint64_t unsigned_field(const json& j, const char* name, std::uint64_t absent) {
  if (!j.contains(name)) return absent;
  const json& value = j.at(name);
  if (!value.is_number_unsigned()) {
    throw std::invalid_argument(std::string("spawn: ") + name + " must be a non-negative integer");
  }
  return value.get<std::uint64_t>();
}

}  // namespace

void from_json(const json& j, spawn_request& m) {
  m.req = j.value("req", std::uint64_t{0});
  m.id = j.at("id").get<std::string>();
  m.argv = j.at("argv").get<std::vector<std::string>>();
  m.env = j.value("env", std::map<std::string, std::string>{});
  m.cwd = j.value("cwd", std::string("/workspace"));
  m.log = j.value("log", std::string());
  m.capture = j.value("capture", false);
  m.output_limit_bytes = unsigned_field(j, "output_limit", default_output_limit_bytes);
  m.stdin_data.reset();
  if (j.contains("stdin")) {
    auto bytes = base64_decode(j.at("stdin").get<std::string>());
    if (!bytes) throw std::invalid_argument("spawn: stdin is not base64");
    m.stdin_data = std::move(*bytes);
  }
  m.timeout_ms.reset();
  if (j.contains("timeout_ms")) m.timeout_ms = unsigned_field(j, "timeout_ms", 0);
  m.streams.reset();
  if (j.contains("streams")) {
    const json& s = j.at("streams");
    if (!s.is_object()) throw std::invalid_argument("spawn: streams must be an object");
    stream_options o;
    o.buffer_bytes = unsigned_field(s, "buffer_bytes", o.buffer_bytes);
    if (o.buffer_bytes > max_stream_buffer_bytes)
      throw std::invalid_argument("spawn: streams.buffer_bytes must be at most 64 MiB");
    o.stdin = s.value("stdin", false);
    if (s.contains("pty") && !s.at("pty").is_null()) {
      const json& pty = s.at("pty");
      if (!pty.is_object()) throw std::invalid_argument("spawn: streams.pty must be an object");
      const auto cols = unsigned_field(pty, "cols", 80);
      const auto rows = unsigned_field(pty, "rows", 24);
      if (cols < 1 || cols > 10000 || rows < 1 || rows > 10000)
        throw std::invalid_argument("spawn: streams.pty cols and rows must be 1 to 10000");
      o.pty = {static_cast<std::uint16_t>(cols), static_cast<std::uint16_t>(rows)};
    }
    m.streams = o;
  }
}

void to_json(json& j, const signal_request& m) {
  j = {{"op", "signal"}, {"req", m.req}, {"id", m.id}, {"signal", m.signal}, {"group", m.group}};
}

void from_json(const json& j, signal_request& m) {
  m.req = j.value("req", std::uint64_t{0});
  m.id = j.at("id").get<std::string>();
  m.signal = j.at("signal").get<int>();
  m.group = j.value("group", true);
}

void to_json(json& j, const reply& m) {
  j = {{"req", m.req}, {"ok", m.ok}};
  if (m.pid) j["pid"] = *m.pid;
  if (!m.ok) j["error"] = m.error;
  if (!m.data.is_null()) j["data"] = m.data;
}

void from_json(const json& j, reply& m) {
  m.req = j.value("req", std::uint64_t{0});
  m.ok = j.at("ok").get<bool>();
  if (j.contains("pid")) m.pid = j.at("pid").get<int>();
  m.error = j.value("error", std::string());
  m.data = j.contains("data") ? j.at("data") : json();
}

void to_json(json& j, const ready_event& m) {
  j = {{"event", "ready"},
       {"id", m.id},
       {"pid", m.pid},
       {"outer_pid", m.outer_pid},
       {"host_uid", m.host_uid},
       {"host_gid", m.host_gid},
       {"expires_at", m.expires_at},
       {"max_execution_s", m.max_execution_s},
       {"children", m.children}};
  if (m.egress_fd) j["egress_fd"] = *m.egress_fd;
}

void from_json(const json& j, ready_event& m) {
  m.id = j.at("id").get<std::string>();
  m.pid = j.at("pid").get<int>();
  m.outer_pid = j.value("outer_pid", 0);
  m.host_uid = j.at("host_uid").get<std::uint32_t>();
  m.host_gid = j.at("host_gid").get<std::uint32_t>();
  m.expires_at = j.at("expires_at").get<std::int64_t>();
  m.max_execution_s = j.value("max_execution_s", std::uint64_t{0});
  m.children = j.value("children", std::vector<std::string>{});
  if (j.contains("egress_fd")) m.egress_fd = j.at("egress_fd").get<int>();
}

void to_json(json& j, const exit_event& m) {
  j = {{"event", "exit"}, {"id", m.id}};
  if (m.code) j["code"] = *m.code;
  if (m.signal) {
    j["signal"] = *m.signal;
    j["oom"] = m.oom;
  }
  if (m.timed_out) j["timed_out"] = true;
  if (m.truncated) j["truncated"] = true;
  if (!m.sandbox_ended.empty()) j["sandbox_ended"] = m.sandbox_ended;
}

void from_json(const json& j, exit_event& m) {
  m.id = j.at("id").get<std::string>();
  if (j.contains("code")) m.code = j.at("code").get<int>();
  if (j.contains("signal")) m.signal = j.at("signal").get<int>();
  m.oom = j.value("oom", false);
  m.timed_out = j.value("timed_out", false);
  m.truncated = j.value("truncated", false);
  m.sandbox_ended = j.value("sandbox_ended", std::string());
}

void to_json(json& j, const kill_request& m) {
  j = {{"op", "kill"}, {"req", m.req}, {"id", m.id}};
}

void from_json(const json& j, kill_request& m) {
  m.req = j.value("req", std::uint64_t{0});
  m.id = j.at("id").get<std::string>();
}

void to_json(json& j, const extend_request& m) {
  j = {{"op", "extend"}, {"req", m.req}, {"expires_at", m.expires_at}};
}

void from_json(const json& j, extend_request& m) {
  m.req = j.value("req", std::uint64_t{0});
  m.expires_at = j.at("expires_at").get<std::int64_t>();
}

std::string_view to_string(output_stream stream) noexcept {
  return stream == output_stream::standard_error ? "stderr" : "stdout";
}

void to_json(json& j, const output_event& m) {
  j = {{"event", "output"}, {"id", m.id}, {"stream", to_string(m.stream)}, {"data", base64_encode(m.data)}};
}

void from_json(const json& j, output_event& m) {
  m.id = j.at("id").get<std::string>();
  const auto stream = j.at("stream").get<std::string>();
  if (stream == "stdout") {
    m.stream = output_stream::standard_output;
  } else if (stream == "stderr") {
    m.stream = output_stream::standard_error;
  } else {
    throw std::invalid_argument("output: unknown stream \"" + stream + "\"");
  }
  auto bytes = base64_decode(j.at("data").get<std::string>());
  if (!bytes) throw std::invalid_argument("output: data is not base64");
  m.data = std::move(*bytes);
}

void append_output_frame(std::string& buffer, std::string_view id, output_stream stream,
                         std::string_view data) {
  const std::size_t start = buffer.size();
  buffer.append(4, '\0');
  buffer += R"({"event":"output","id":)";
  buffer += json(id).dump(-1, ' ', false, json::error_handler_t::replace);
  buffer += R"(,"stream":")";
  buffer += to_string(stream);
  buffer += R"(","data":")";
  base64_append(buffer, data);
  buffer += "\"}";
  const std::size_t n = buffer.size() - start - 4;
  if (n > max_frame_bytes) {
    buffer.resize(start);
    throw std::length_error("control frame larger than 1 MiB");
  }
  buffer[start] = static_cast<char>(n >> 24);
  buffer[start + 1] = static_cast<char>(n >> 16);
  buffer[start + 2] = static_cast<char>(n >> 8);
  buffer[start + 3] = static_cast<char>(n);
}

}  // namespace sandgate::sandboxing::control
