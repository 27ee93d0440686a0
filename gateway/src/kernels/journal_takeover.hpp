#pragma once
// Taking up, after a gateway restart, the executions an earlier gateway
// left running: their output so far comes from the kernel's iopub journal
// (what the kernel published, including while no gateway listened), the
// rest from the live channel, each message counted once.

#include "executions.hpp"

#include <jupyter_protocol/message.hpp>
#include <jupyter_protocol/signer.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace sandgate::gateway {

class journal_takeover : public std::enable_shared_from_this<journal_takeover> {
 public:
  // Feeds one iopub message to the execution log (and what watches it).
  using recorder = std::function<void(const protocol::message& msg, std::string_view status)>;
  // The journal has been read; `running`: the executions still running.
  using read_handler = std::function<void(const std::vector<std::string>& running)>;

  // Owned by a shared_ptr: its timer's handlers hold it weakly.
  journal_takeover(boost::asio::io_context& io, execution_log& log, std::string kernel_id, recorder record);

  // Before the kernel is re-attached: the executions an earlier gateway
  // left running (execution_record::to_stored_json texts). `recorded(msg_id)`:
  // whether the registry holds any record of that execute. One that the
  // journal shows beginning but that has no record (it began just before the
  // earlier gateway died, its row still queued) is taken up from the journal alone.
  void expect(const std::vector<std::string>& stored,
              std::function<bool(const std::string& msg_id)> recorded);
  // The journal is still to be read: live iopub waits (hold()) to be
  // recorded after what the journal holds.
  [[nodiscard]] bool waiting() const noexcept { return recorded_ != nullptr; }
  // Executions are being taken up (from before their live output).
  [[nodiscard]] bool any() const noexcept { return !taken_up_.empty(); }
  void hold(const protocol::message& msg);
  // A live iopub message: recorded (once) if it belongs to a taken-up
  // execution; false if it does not.
  bool record_live(const protocol::message& msg, std::string_view status);
  // Reads the journal (`base` + ".journal.0"/".journal.1", each at most
  // `limit` bytes; what is not signed by `signer` is left out) once it holds
  // the first held live message (the kernel writes it from a subscriber of
  // its own, which may lag), records it, then what came live meanwhile.
  void read(const std::filesystem::path& base, std::size_t limit, const protocol::signer& signer,
            const read_handler& done);
  // The kernel ended or restarted: nothing is taken up.
  void forget();

 private:
  void read_again(const std::filesystem::path& base, std::size_t limit, const protocol::signer& signer,
                  const read_handler& done);
  // Takes up the executes the journal shows beginning that nothing told of;
  // the number taken up.
  std::size_t discover(const std::vector<protocol::message>& messages,
                       const std::function<bool(const std::string&)>& recorded,
                       std::unordered_set<std::string>& began);

  struct taken_up_execution {
    std::unordered_set<std::string> counted;  // msg_ids recorded, from the journal or live
  };

  execution_log& log_;
  std::string kernel_id_;
  recorder record_;
  std::unordered_map<std::string, taken_up_execution> taken_up_;
  std::function<bool(const std::string& msg_id)> recorded_;  // set until the journal is read
  std::vector<protocol::message> held_;                      // live iopub from before the journal was read
  std::size_t held_bytes_ = 0;
  int reads_ = 0;
  boost::asio::steady_timer timer_;
};

}  // namespace sandgate::gateway
