// Taking up, after a gateway restart, the executions an earlier gateway left
// running: their output so far comes from the kernel's iopub journal (what
// the kernel published, including while no gateway listened), the rest from
// the live channel, each message counted once.

#include "kernel.hpp"

#include "../util/json_input.hpp"

#include <gateway/log.hpp>
#include <jupyter_protocol/journal.hpp>
#include <jupyter_protocol/wire.hpp>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>

namespace sandgate::gateway {
namespace {

using protocol::channel;

// One journal file, read without following links and at most `limit` bytes:
// the kernel (hostile) wrote it and may have made it anything.
std::vector<protocol::journal_record> read_journal_file(const std::filesystem::path& path,
                                                        std::size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {};
  std::string data;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    data.resize(std::min<std::size_t>(static_cast<std::size_t>(st.st_size), limit));
    std::size_t got = 0;
    while (got < data.size()) {
      const ssize_t n = ::read(fd, data.data() + got, data.size() - got);
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    data.resize(got);
  }
  ::close(fd);
  return protocol::parse_journal(data);
}

}  // namespace

void kernel::take_up_executions(const std::vector<std::string>& stored,
                                std::function<bool(const std::string& msg_id)> recorded) {
  for (const auto& text : stored) {
    if (auto r = executions_.restore(parse_json(text))) taken_up_.emplace(r->msg_id, taken_up_execution{});
  }
  recorded_ = std::move(recorded);
}

bool kernel::record_taken_up(const protocol::message& msg, std::string_view status) {
  auto it = taken_up_.find(msg.parent.msg_id);
  if (it == taken_up_.end()) return false;
  if (it->second.counted.insert(msg.msg_id()).second) record(channel::iopub, msg, status);
  if (auto r = executions_.find(it->first); !r || r->done()) taken_up_.erase(it);
  return true;
}

void kernel::forget_taken_up() {
  taken_up_.clear();
  recorded_ = nullptr;
  journal_held_.clear();
  journal_held_bytes_ = 0;
  journal_timer_.cancel();
}

void kernel::replay_journal() {
  // The journal is complete up to the first live message once it holds
  // that: the kernel's subscriber gets every message in order. Until then
  // it is read again, for a while; a kernel without a journal has none to
  // wait for, and past a bound on what waits, what the journal has counts.
  constexpr int max_reads = 100;  // 20 ms apart
  constexpr std::size_t max_held_bytes = 16 * 1024 * 1024;
  ++journal_reads_;
  const auto base = box_->run_dir_host() / file_name_;
  auto journal =
      protocol::merge_journals(read_journal_file(base.string() + ".journal.0", opts_.limits.journal_bytes),
                               read_journal_file(base.string() + ".journal.1", opts_.limits.journal_bytes));
  std::vector<protocol::message> messages;
  messages.reserve(journal.size());
  for (auto& rec : journal) {
    protocol::message msg;
    if (!protocol::decode(std::move(rec.frames), signer_, msg)) messages.push_back(std::move(msg));
  }  // what is not signed with the kernel's key is left out
  const bool caught_up = journal_held_.empty() || messages.empty() ||
                         std::any_of(messages.rbegin(), messages.rend(), [&](const protocol::message& m) {
                           return m.msg_id() == journal_held_.front().msg_id();
                         });
  if (!caught_up && journal_reads_ < max_reads && journal_held_bytes_ < max_held_bytes) {
    journal_timer_.expires_after(std::chrono::milliseconds(20));
    journal_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec && self->recorded_) self->replay_journal();
    });
    return;
  }
  const auto recorded = std::exchange(recorded_, nullptr);
  // An execute the journal shows beginning (its execute_input: a cell, not
  // the gateway's silent ones) that no record tells of: its running row was
  // still queued when the earlier gateway died. It started when the kernel
  // says it did (a date it cannot read counts as now); one from before the
  // records' retention is not taken up.
  std::size_t discovered = 0;
  std::unordered_set<std::string> began;  // executions whose first messages are in the journal
  for (const auto& msg : messages) {
    const auto& msg_id = msg.parent.msg_id;
    const bool input = msg.msg_type() == "execute_input";
    if (input || execution_state_of(msg) == "busy") began.insert(msg_id);
    if (!input || msg_id.empty() || taken_up_.count(msg_id) || executions_.find(msg_id) ||
        (recorded && recorded(msg_id)))
      continue;
    const auto started = protocol::parse_iso8601(msg.head.date).value_or(std::chrono::system_clock::now());
    if (!executions_.take_up(msg_id, started)) continue;
    taken_up_.emplace(msg_id, taken_up_execution{});
    ++discovered;
  }
  // Without its beginning (no journal, or it rolled over) a record lacks
  // what came before the restart, and says so before it can end.
  for (const auto& [msg_id, t] : taken_up_)
    if (auto r = executions_.find(msg_id); r && !began.count(msg_id)) r->truncated = true;
  std::size_t used = 0;
  for (const auto& msg : messages) {
    auto it = taken_up_.find(msg.parent.msg_id);
    if (it == taken_up_.end() || !it->second.counted.insert(msg.msg_id()).second) continue;
    record(channel::iopub, msg, execution_state_of(msg));
    ++used;
  }
  // Then what came live meanwhile, in order, each message once.
  for (const auto& msg : std::exchange(journal_held_, {})) {
    const auto status = execution_state_of(msg);
    if (taken_up_.empty() || !record_taken_up(msg, status)) record(channel::iopub, msg, status);
  }
  journal_held_bytes_ = 0;
  for (auto it = taken_up_.begin(); it != taken_up_.end();) {
    auto r = executions_.find(it->first);
    if (r && !r->done()) {
      state_ = "busy";
      track_execution(it->first, "busy");  // the time limit counts from the execution's start
      ++it;
    } else {
      it = taken_up_.erase(it);
    }
  }
  // The cells the stored rows told of ended while no gateway listened.
  if (std::exchange(state_presumed_, false) && taken_up_.empty()) state_ = "idle";
  log::info("executions_taken_up", {{"kernel_id", id()},
                                    {"journal_messages", std::to_string(journal.size())},
                                    {"journal_reads", std::to_string(journal_reads_)},
                                    {"used", std::to_string(used)},
                                    {"found_in_journal", std::to_string(discovered)},
                                    {"still_running", std::to_string(taken_up_.size())}});
}

}  // namespace sandgate::gateway
