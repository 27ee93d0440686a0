// A xeus server that acts on interrupt_request (interrupt_mode "message").
//
// xeus 2.4.1 answers interrupt_request with an empty interrupt_reply and does
// nothing else. This decorator wraps the usual shell-on-main-thread server,
// calls the kernel's interrupt hook on the control thread when an
// interrupt_request arrives, then lets xeus reply as usual.
#pragma once

#include <functional>
#include <memory>

#include <xeus/xeus_context.hpp>
#include <xeus/xkernel_configuration.hpp>
#include <xeus/xserver.hpp>

namespace sandgate::kernels {

// Called on the control thread for each interrupt_request. Must be
// thread-safe and quick (e.g. pthread_kill or kill of a process group).
using interrupt_hook = std::function<void()>;

// Sets the hook used by servers made afterwards; call before building xkernel.
void set_interrupt_hook(interrupt_hook hook);

// Server builder with xkernel's signature (xeus::xkernel::server_builder).
std::unique_ptr<xeus::xserver> make_interrupting_server(xeus::xcontext& context,
                                                        const xeus::xconfiguration& config,
                                                        nl::json::error_handler_t eh);

class interrupting_server final : public xeus::xserver {
 public:
  interrupting_server(std::unique_ptr<xeus::xserver> inner, interrupt_hook hook);

 private:
  xeus::xcontrol_messenger& get_control_messenger_impl() override;
  void send_shell_impl(xeus::xmessage message) override;
  void send_control_impl(xeus::xmessage message) override;
  void send_stdin_impl(xeus::xmessage message) override;
  void publish_impl(xeus::xpub_message message, xeus::channel c) override;
  void start_impl(xeus::xpub_message message) override;
  void abort_queue_impl(const listener& l, long polling_interval) override;
  void stop_impl() override;
  void update_config_impl(xeus::xconfiguration& config) const override;

  void on_control(xeus::xmessage message);

  std::unique_ptr<xeus::xserver> inner_;  // the ZeroMQ server doing the I/O
  interrupt_hook hook_;                   // what "interrupt" means for this kernel
};

}  // namespace sandgate::kernels
