// A gateway: POST /api/kernels, then the channels WebSocket; DELETE at the end.
#include "conversation.hpp"
#include "http_client.hpp"
#include "targets.hpp"
#include "ws_connection.hpp"

#include <nlohmann/json.hpp>

namespace sandgate::bench {
namespace {

constexpr auto start_timeout = std::chrono::seconds(120);

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

  void connect(const ws_endpoint& ep, std::string session) {
    connection_ = std::make_unique<ws_connection>(ep, std::move(session));
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
    const std::string kernels_url = opts_.base_url + "api/kernels";
    const auto res = http_.request("POST", kernels_url, nlohmann::json{{"name", opts_.kernel_name}}.dump());
    if (res.status != 201 && res.status != 200)
      throw bench_error("POST " + kernels_url + ": " + std::to_string(res.status) + " " + res.body);
    const auto id = nlohmann::json::parse(res.body).at("id").get<std::string>();
    auto session = std::make_unique<rest_session>(http_, kernels_url, id);
    const std::string session_id = protocol::new_uuid4();
    session->connect({opts_.host, opts_.port, session->url() + "/channels?session_id=" + session_id,
                      opts_.token, opts_.v1},
                     session_id);
    (void)kernel_info(session->connection(), start_timeout);
    session->start_ms = ms_between(started, bench_clock::now());
    sync_iopub(session->connection(), start_timeout, start_timeout);
    return session;
  }

  pid_t server_pid() const override { return opts_.server_pid; }

 private:
  rest_options opts_;
  http_client http_;
};

}  // namespace

std::unique_ptr<target> make_rest_target(const rest_options& opts) {
  return std::make_unique<rest_target>(opts);
}

}  // namespace sandgate::bench
