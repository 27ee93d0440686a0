#pragma once
// The four ZeroMQ channels of one kernel (shell, control, stdin: DEALER;
// iopub: SUB), connected through pinned sockets, signing what goes out and
// checking what comes in with the kernel's key; the kernel_info probe that
// tells when a (re)started kernel answers; and the hold on its output that
// slow clients ask for.

#include "socket_pins.hpp"
#include "zmq_channel.hpp"

#include <jupyter_protocol/message.hpp>
#include <jupyter_protocol/signer.hpp>
#include <jupyter_protocol/websocket.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <sys/types.h>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace sandgate::gateway {

class kernel_channels : public std::enable_shared_from_this<kernel_channels> {
 public:
  using message_handler = std::function<void(protocol::channel, protocol::message&&)>;
  using ready_handler = std::function<void(std::string error)>;  // empty: ready
  // A message over the size limit, checked like any other: `head` holds
  // only its identities and headers, `bytes` its size.
  using oversized_handler =
      std::function<void(protocol::channel, protocol::message&& head, std::size_t bytes)>;

  // `identity`: the routing id of shell and stdin, and the session of the
  // probes. `iopub_backpressure`: the kernel's iopub waits for its readers
  // instead of dropping (kernelspec metadata), so it may be held. Owned by
  // a shared_ptr: its sockets' and timers' callbacks hold it weakly.
  kernel_channels(boost::asio::io_context& io, zmq::context_t& zmq, std::string kernel_id, std::string key,
                  std::string identity, bool iopub_backpressure, message_handler on_message);
  ~kernel_channels();
  kernel_channels(const kernel_channels&) = delete;
  kernel_channels& operator=(const kernel_channels&) = delete;

  // Once the sockets `names` (shell, control, stdin, iopub) exist in `dir`
  // as sockets of `owner`, pins and connects them, then asks kernel_info on
  // shell and control each second until the kernel has answered one and
  // iopub has carried a message: `ready` then gets nothing, or why the
  // sockets could not be connected. Replies to the probes go nowhere else.
  void open(std::filesystem::path dir, std::vector<std::string> names, uid_t owner, ready_handler ready);
  // Closes the sockets; no handler runs after this.
  void close();

  // Signs and sends; `refused` (and logged) when the channel cannot take it.
  send_result send(protocol::channel ch, const protocol::message& msg);
  // A message waits in an input channel's queue (in `ch`'s).
  [[nodiscard]] bool congested() const;
  [[nodiscard]] bool congested(protocol::channel ch) const;
  // Runs each time an input channel's queue has gone out and none is congested.
  void on_drained(std::function<void()> callback) { on_drained_ = std::move(callback); }

  // Messages over `bytes` are not taken in (see oversized_handler).
  void set_message_limit(std::size_t bytes, oversized_handler on_oversized);

  // A client that has fallen behind holds the kernel's output back until it
  // catches up (each hold is released once), and so does a kernel over its
  // share of the output budget. Only a kernel whose iopub waits is held:
  // its iopub is not read, and it waits.
  void hold_output();
  void release_output();
  void set_over_budget(bool over);

  [[nodiscard]] const protocol::signer& signer() const noexcept { return signer_; }

 private:
  void wait_for_sockets();
  void connect();
  void probe();
  void on_frames(protocol::channel ch, std::vector<std::string>&& frames);
  // A message while the probe runs; false when it was a probe's reply.
  bool probed(protocol::channel ch, const protocol::message& msg);
  void on_oversized(protocol::channel ch, std::vector<zmq::message_t>& parts, std::size_t bytes);
  void become_ready();
  void update_iopub_pause();
  zmq_channel* channel_for(protocol::channel ch) const;

  // iopub messages ZeroMQ reads ahead of the gateway for a kernel that can
  // be held (see hold_output), whatever their size: what a held kernel has
  // sent stays within two or three messages. Fixed for the connection's
  // life: libzmq acknowledges reads only every (limit + 1) / 2 messages, so
  // lowering the limit of an open pipe below what it has not acknowledged
  // would stop it for good.
  static constexpr int held_iopub_messages = 2;

  boost::asio::io_context& io_;
  zmq::context_t& zmq_;
  std::string kernel_id_;  // for the log
  protocol::signer signer_;
  std::string identity_;
  bool iopub_backpressure_;
  message_handler on_message_;
  std::function<void()> on_drained_;
  std::filesystem::path dir_;
  std::vector<std::string> names_;
  uid_t owner_ = 0;
  ready_handler ready_;  // set while the probe runs
  bool probe_answered_ = false;
  bool iopub_seen_ = false;
  std::unordered_set<std::string> probes_;  // msg_ids of the probes since open()
  socket_pins pins_;
  std::shared_ptr<zmq_channel> shell_, control_, stdin_, iopub_;
  unsigned output_holds_ = 0;
  bool over_budget_ = false;
  std::size_t message_limit_ = 0;
  oversized_handler on_oversized_;
  boost::asio::steady_timer timer_;
};

}  // namespace sandgate::gateway
