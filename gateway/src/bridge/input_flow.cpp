#include "input_flow.hpp"

#include "../util/metrics.hpp"

#include <nlohmann/json.hpp>

#include <string_view>

namespace sandgate::gateway {

void input_waiters::add(const std::shared_ptr<kernel_client>& client) {
  for (const auto& w : waiting_)
    if (w.lock() == client) return;
  ++gateway_metrics().input_waits;
  waiting_.push_back(client);
}

void input_waiters::resume_all() {
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (const auto& w : waiting)
    if (auto client = w.lock()) client->resume_input();
}

std::vector<std::shared_ptr<outgoing>> refusal_answers(protocol::channel ch, const protocol::message& request,
                                                       const std::string& why, const std::string& session) {
  std::vector<std::shared_ptr<outgoing>> answers;
  constexpr std::string_view request_suffix = "_request";
  const auto& type = request.msg_type();
  const bool is_request = type.size() > request_suffix.size() && type.ends_with(request_suffix);
  if (is_request && (ch == protocol::channel::shell || ch == protocol::channel::control)) {
    nlohmann::json content = {{"status", "error"},
                              {"ename", "GatewayInputRefused"},
                              {"evalue", why},
                              {"traceback", nlohmann::json::array({"GatewayInputRefused: " + why})}};
    if (type == "execute_request") content["execution_count"] = nullptr;
    const auto reply_type = type.substr(0, type.size() - request_suffix.size()) + "_reply";
    answers.push_back(
        std::make_shared<outgoing>(ch, protocol::make_reply(request, reply_type, content.dump())));
  }
  answers.push_back(
      std::make_shared<outgoing>(protocol::channel::iopub, protocol::make_status("idle", session, &request)));
  return answers;
}

}  // namespace sandgate::gateway
