#include "sandgate_kernels/interrupting_server.hpp"

#include <mutex>
#include <utility>

#include <xeus/xserver_shell_main.hpp>

#include "ipc_directory_scope.hpp"
#include "sandgate_kernels/iopub_sockets.hpp"

namespace sandgate::kernels {
namespace {

std::mutex hook_mutex;
interrupt_hook current_hook;

}  // namespace

void set_interrupt_hook(interrupt_hook hook) {
  const std::scoped_lock lock(hook_mutex);
  current_hook = std::move(hook);
}

std::unique_ptr<xeus::xserver> make_interrupting_server(xeus::xcontext& context,
                                                        const xeus::xconfiguration& config,
                                                        nl::json::error_handler_t eh) {
  interrupt_hook hook;
  {
    const std::scoped_lock lock(hook_mutex);
    hook = current_hook;
  }
  xeus::xconfiguration bind_config = config;
  std::unique_ptr<xeus::xserver> inner;
  {
    const ipc_directory_scope scope(bind_config);
    inner = xeus::make_xserver_shell_main(context, bind_config, eh);
  }
  // Its sockets exist, its threads do not run yet: its first messages go out.
  settle_iopub_subscriptions();
  return std::make_unique<interrupting_server>(std::move(inner), std::move(hook));
}

interrupting_server::interrupting_server(std::unique_ptr<xeus::xserver> inner, interrupt_hook hook)
    : inner_(std::move(inner)), hook_(std::move(hook)) {
  inner_->register_shell_listener([this](xeus::xmessage m) { notify_shell_listener(std::move(m)); });
  inner_->register_control_listener([this](xeus::xmessage m) { on_control(std::move(m)); });
  inner_->register_stdin_listener([this](xeus::xmessage m) { notify_stdin_listener(std::move(m)); });
  inner_->register_internal_listener([this](nl::json m) { return notify_internal_listener(std::move(m)); });
}

void interrupting_server::on_control(xeus::xmessage message) {
  // The message is already authenticated by the inner server.
  const auto& header = message.header();
  if (hook_ && header.is_object() && header.value("msg_type", "") == "interrupt_request") {
    hook_();
  }
  notify_control_listener(std::move(message));
}

xeus::xcontrol_messenger& interrupting_server::get_control_messenger_impl() {
  return inner_->get_control_messenger();
}

void interrupting_server::send_shell_impl(xeus::xmessage message) {
  inner_->send_shell(std::move(message));
}

void interrupting_server::send_control_impl(xeus::xmessage message) {
  inner_->send_control(std::move(message));
}

void interrupting_server::send_stdin_impl(xeus::xmessage message) {
  inner_->send_stdin(std::move(message));
}

void interrupting_server::publish_impl(xeus::xpub_message message, xeus::channel c) {
  inner_->publish(std::move(message), c);
}

void interrupting_server::start_impl(xeus::xpub_message message) {
  inner_->start(std::move(message));
}

void interrupting_server::abort_queue_impl(const listener& l, long polling_interval) {
  inner_->abort_queue(l, polling_interval);
}

void interrupting_server::stop_impl() {
  inner_->stop();
}

void interrupting_server::update_config_impl(xeus::xconfiguration& config) const {
  inner_->update_config(config);
}

}  // namespace sandgate::kernels
