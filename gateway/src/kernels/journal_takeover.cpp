#include "journal_takeover.hpp"

#include "../util/json_input.hpp"

#include <gateway/log.hpp>
#include <jupyter_protocol/journal.hpp>
#include <jupyter_protocol/wire.hpp>
#include <sandboxing/unique_fd.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace sandgate::gateway {
namespace {

using protocol::channel;

// One journal file, read without following links and at most `limit` bytes:
// the kernel (hostile) wrote it and may have made it anything.
std::vector<protocol::journal_record> read_journal_file(const std::filesystem::path& path,
                                                        std::size_t limit) {
  const sandboxing::unique_fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return {};
  std::string data;
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode)) {
    data.resize(std::min<std::size_t>(static_cast<std::size_t>(st.st_size), limit));
    std::size_t got = 0;
    while (got < data.size()) {
      const ssize_t n = ::read(fd.get(), data.data() + got, data.size() - got);
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    data.resize(got);
  }
  return protocol::parse_journal(data);
}

}  // namespace

journal_takeover::journal_takeover(boost::asio::io_context& io, execution_log& log, std::string kernel_id,
                                   recorder record)
    : log_(log), kernel_id_(std::move(kernel_id)), record_(std::move(record)), timer_(io) {}

void journal_takeover::expect(const std::vector<std::string>& stored,
                              std::function<bool(const std::string& msg_id)> recorded) {
  for (const auto& text : stored) {
    if (auto r = log_.restore(parse_json(text))) taken_up_.emplace(r->msg_id, taken_up_execution{});
  }
  recorded_ = std::move(recorded);
}

void journal_takeover::hold(const protocol::message& msg) {
  held_bytes_ += msg.content.size();
  for (const auto& b : msg.buffers)
    held_bytes_ += b.size();
  held_.push_back(msg.clone());
}

bool journal_takeover::record_live(const protocol::message& msg, std::string_view status) {
  auto it = taken_up_.find(msg.parent.msg_id);
  if (it == taken_up_.end()) return false;
  if (it->second.counted.insert(msg.msg_id()).second) record_(msg, status);
  if (auto r = log_.find(it->first); !r || r->done()) taken_up_.erase(it);
  return true;
}

void journal_takeover::forget() {
  taken_up_.clear();
  recorded_ = nullptr;
  held_.clear();
  held_bytes_ = 0;
  timer_.cancel();
}

void journal_takeover::read(const std::filesystem::path& base, std::size_t limit,
                            const protocol::signer& signer, const read_handler& done) {
  reads_ = 0;
  read_again(base, limit, signer, done);
}

void journal_takeover::read_again(const std::filesystem::path& base, std::size_t limit,
                                  const protocol::signer& signer, const read_handler& done) {
  // The journal is complete up to the first live message once it holds
  // that: the kernel's subscriber gets every message in order. Until then
  // it is read again, for a while; a kernel without a journal has none to
  // wait for, and past a bound on what waits, what the journal has counts.
  constexpr int max_reads = 100;  // 20 ms apart
  constexpr std::size_t max_held_bytes = 16 * 1024 * 1024;
  ++reads_;
  auto journal = protocol::merge_journals(read_journal_file(base.string() + ".journal.0", limit),
                                          read_journal_file(base.string() + ".journal.1", limit));
  std::vector<protocol::message> messages;
  messages.reserve(journal.size());
  for (auto& rec : journal) {
    protocol::message msg;
    if (!protocol::decode(std::move(rec.frames), signer, msg)) messages.push_back(std::move(msg));
  }  // what is not signed with the kernel's key is left out
  const bool caught_up = held_.empty() || messages.empty() ||
                         std::any_of(messages.rbegin(), messages.rend(), [&](const protocol::message& m) {
                           return m.msg_id() == held_.front().msg_id();
                         });
  if (!caught_up && reads_ < max_reads && held_bytes_ < max_held_bytes) {
    timer_.expires_after(std::chrono::milliseconds(20));
    timer_.async_wait(
        [weak = weak_from_this(), base, limit, signer, done](const boost::system::error_code& ec) {
          if (auto self = weak.lock(); self && !ec && self->recorded_)
            self->read_again(base, limit, signer, done);
        });
    return;
  }
  std::unordered_set<std::string> began;  // executions whose first messages are in the journal
  const std::size_t discovered = discover(messages, std::exchange(recorded_, nullptr), began);
  // Without its beginning (no journal, or it rolled over) a record lacks
  // what came before the restart, and says so before it can end.
  for (const auto& [msg_id, t] : taken_up_)
    if (auto r = log_.find(msg_id); r && !began.count(msg_id)) r->truncated = true;
  std::size_t used = 0;
  for (const auto& msg : messages) {
    auto it = taken_up_.find(msg.parent.msg_id);
    if (it == taken_up_.end() || !it->second.counted.insert(msg.msg_id()).second) continue;
    record_(msg, execution_state_of(msg));
    ++used;
  }
  // Then what came live meanwhile, in order, each message once.
  for (const auto& msg : std::exchange(held_, {})) {
    const auto status = execution_state_of(msg);
    if (taken_up_.empty() || !record_live(msg, status)) record_(msg, status);
  }
  held_bytes_ = 0;
  std::vector<std::string> running;
  for (auto it = taken_up_.begin(); it != taken_up_.end();) {
    if (auto r = log_.find(it->first); r && !r->done()) {
      running.push_back(it->first);
      ++it;
    } else {
      it = taken_up_.erase(it);
    }
  }
  log::info("executions_taken_up", {{"kernel_id", kernel_id_},
                                    {"journal_messages", std::to_string(journal.size())},
                                    {"journal_reads", std::to_string(reads_)},
                                    {"used", std::to_string(used)},
                                    {"found_in_journal", std::to_string(discovered)},
                                    {"still_running", std::to_string(running.size())}});
  done(running);
}

// An execute the journal shows beginning (its execute_input: a cell, not
// the gateway's silent ones) that no record tells of: its running row was
// still queued when the earlier gateway died. It started when the kernel
// says it did (a date it cannot read counts as now); one from before the
// records' retention is not taken up.
std::size_t journal_takeover::discover(const std::vector<protocol::message>& messages,
                                       const std::function<bool(const std::string&)>& recorded,
                                       std::unordered_set<std::string>& began) {
  std::size_t discovered = 0;
  for (const auto& msg : messages) {
    const auto& msg_id = msg.parent.msg_id;
    const bool input = msg.msg_type() == "execute_input";
    if (input || execution_state_of(msg) == "busy") began.insert(msg_id);
    if (!input || msg_id.empty() || taken_up_.count(msg_id) || log_.find(msg_id) ||
        (recorded && recorded(msg_id)))
      continue;
    const auto started = protocol::parse_iso8601(msg.head.date).value_or(std::chrono::system_clock::now());
    if (!log_.take_up(msg_id, started)) continue;
    taken_up_.emplace(msg_id, taken_up_execution{});
    ++discovered;
  }
  return discovered;
}

}  // namespace sandgate::gateway
