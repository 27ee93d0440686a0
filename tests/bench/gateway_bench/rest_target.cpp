// A gateway: POST /api/kernels, then the channels WebSocket; DELETE at the end.
#include "conversation.hpp"
#include "http_client.hpp"
#include "targets.hpp"
#include "ws_connection.hpp"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <sstream>

namespace sandgate::bench {
namespace {

// The value of `name{kernel="KERNEL"...} VALUE` in a Prometheus text page.
std::optional<double> gauge(const std::string& page, const std::string& name, const std::string& kernel) {
  std::istringstream in(page);
  const std::string label = "kernel=\"" + kernel + "\"";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + "{", 0) != 0) continue;
    const auto close = line.find('}');
    if (close == std::string::npos || line.substr(0, close).find(label) == std::string::npos) continue;
    return std::strtod(line.c_str() + close + 1, nullptr);
  }
  return std::nullopt;
}

class rest_session final : public kernel_session {
 public:
  rest_session(const http_client& http, std::string kernels_url, std::string id)
      : http_(http), kernel_url_(std::move(kernels_url) + "/" + id) {}
  ~rest_session() override {
    connection_.reset();
    try {
      (void)http_.request("DELETE", kernel_url_);
    } catch (const std::exception&) {
      // the gateway ends its kernels when it stops
    }
  }
  kernel_connection& connection() override { return *connection_; }
  // A fresh channels WebSocket with a new session_id.
  void connect(bool v1, std::chrono::milliseconds handshake_timeout) {
    const std::string session_id = protocol::new_uuid4();
    const ws_endpoint ep{http_.host(),  http_.port(), kernel_url_ + "/channels?session_id=" + session_id,
                         http_.token(), v1,           handshake_timeout};
    connection_ = std::make_unique<ws_connection>(ep, session_id);
  }
  [[nodiscard]] const std::string& url() const noexcept { return kernel_url_; }

 private:
  const http_client& http_;
  std::string kernel_url_;
  std::unique_ptr<ws_connection> connection_;
};

class rest_target final : public target {
 public:
  explicit rest_target(rest_options opts)
      : opts_(std::move(opts)), http_(opts_.host, opts_.port, opts_.token) {}

  std::unique_ptr<kernel_session> start_kernel() override {
    const auto started = bench_clock::now();
    auto session = post_and_connect(started);
    (void)kernel_info(session->connection(), opts_.start_timeout);
    session->start_ms = ms_between(started, bench_clock::now());
    sync_iopub(session->connection(), opts_.start_timeout, opts_.start_timeout);
    return session;
  }

  std::unique_ptr<kernel_session> create_kernel() override { return post_and_connect(bench_clock::now()); }

  std::optional<double> pool_metric(const std::string& name) override {
    const auto res = http_.request("GET", opts_.base_url + "metrics");
    if (res.status != 200) return std::nullopt;
    return gauge(res.body, name, opts_.kernel_name);
  }

  pid_t server_pid() const override { return opts_.server_pid; }

 private:
  std::unique_ptr<rest_session> post_and_connect(bench_clock::time_point started) {
    const std::string kernels_url = opts_.base_url + "api/kernels";
    const auto res = http_.request("POST", kernels_url, nlohmann::json{{"name", opts_.kernel_name}}.dump());
    if (res.status != 201 && res.status != 200)
      throw bench_error("POST " + kernels_url + ": " + std::to_string(res.status) + " " +
                        res.body.substr(0, 300));
    const auto id = nlohmann::json::parse(res.body).at("id").get<std::string>();
    auto session = std::make_unique<rest_session>(http_, kernels_url, id);
    session->created_ms = ms_between(started, bench_clock::now());
    session->connect(opts_.v1, opts_.start_timeout);
    session->connected_ms = ms_between(started, bench_clock::now());
    return session;
  }

  rest_options opts_;
  http_client http_;
};

}  // namespace

std::unique_ptr<target> make_rest_target(const rest_options& opts) {
  return std::make_unique<rest_target>(opts);
}

}  // namespace sandgate::bench
