// The registry's execution records: written by a thread of their own, in
// batches (one transaction, one WAL append, for what comes within the batch
// window), and read back by kernel and msg_id.

#include "database.hpp"
#include "registry.hpp"
#include "statement.hpp"

#include <gateway/log.hpp>

#include <sqlite3.h>

#include <stdexcept>
#include <unordered_map>

namespace sandgate::gateway {
namespace fs = std::filesystem;

void registry::start_writer(const fs::path& path, std::chrono::milliseconds batch_window) {
  writer_db_ = open_database(path);
  // Execution records need to outlive the gateway's process (a kill -9),
  // which a WAL commit does without a sync; a power loss may take the last
  // batches, never the database. Sandbox and kernel records keep FULL.
  char* error = nullptr;
  if (sqlite3_exec(writer_db_, "PRAGMA synchronous=NORMAL", nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    throw std::runtime_error("sqlite: " + message);
  }
  batch_window_ = batch_window;
  begin_ = std::make_unique<statement>(writer_db_, "BEGIN", true);
  commit_ = std::make_unique<statement>(writer_db_, "COMMIT", true);
  rollback_ = std::make_unique<statement>(writer_db_, "ROLLBACK", true);
  insert_execution_ = std::make_unique<statement>(
      writer_db_,
      "INSERT OR REPLACE INTO executions (kernel_id, msg_id, record, finished_at, running) "
      "VALUES (?1, ?2, ?3, ?4, ?5)",
      true);
  stats_.statements_prepared = 4;
  writer_ = std::thread([this] { write_executions(); });
}

void registry::put_execution(const std::string& kernel_id, const std::string& msg_id, std::string record,
                             bool running) {
  bool was_empty = false;
  {
    std::lock_guard lock(mutex_);
    was_empty = queue_.empty();
    if (was_empty) oldest_queued_ = std::chrono::steady_clock::now();
    queue_.push_back({kernel_id, msg_id, std::move(record), running});
  }
  // The writer waits for a first record, then for its batch window: later
  // ones need not wake it.
  if (was_empty) wake_.notify_one();
}

void registry::flush() {
  std::unique_lock lock(mutex_);
  ++flushing_;
  wake_.notify_one();
  written_.wait(lock, [this] { return queue_.empty() && in_flight_ == 0; });
  --flushing_;
}

registry::writer_stats registry::execution_writer_stats() {
  std::lock_guard lock(mutex_);
  return stats_;
}

void registry::write_executions() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty() && stopping_) return;
    // Let what comes within the window (an execution's end soon after its
    // start, the next execution) join this transaction.
    wake_.wait_until(lock, oldest_queued_ + batch_window_, [this] { return stopping_ || flushing_ > 0; });
    std::deque<pending_execution> batch;
    batch.swap(queue_);
    in_flight_ = batch.size();
    lock.unlock();
    const std::size_t written = write_batch(batch);
    lock.lock();
    in_flight_ = 0;
    if (written > 0) {
      ++stats_.transactions;
      stats_.records_written += written;
      stats_.records_superseded += batch.size() - written;
    }
    written_.notify_all();
  }
}

std::size_t registry::write_batch(const std::deque<pending_execution>& batch) {
  // The last record of each execution in the batch; the others it replaces.
  auto key_of = [](const pending_execution& e) { return e.kernel_id + '\0' + e.msg_id; };
  std::unordered_map<std::string, std::size_t> last;
  last.reserve(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i)
    last[key_of(batch[i])] = i;
  std::size_t written = 0;
  try {  // one transaction per batch: one WAL append for many records
    begin_->step();
    begin_->reset();
    const std::int64_t now = unix_now();
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const auto& e = batch[i];
      if (last.size() < batch.size() && last.find(key_of(e))->second != i) continue;
      auto& st = *insert_execution_;
      st.bind(1, e.kernel_id, true)
          .bind(2, e.msg_id, true)
          .bind(3, e.record, true)
          .bind(4, now)
          .bind(5, std::int64_t{e.running ? 1 : 0});
      try {
        st.step();
      } catch (...) {
        st.reset();
        throw;
      }
      st.reset();
      ++written;
    }
    commit_->step();
    commit_->reset();
    return written;
  } catch (const std::exception& e) {
    commit_->reset();
    begin_->reset();
    if (!sqlite3_get_autocommit(writer_db_)) {
      try {
        rollback_->step();
      } catch (...) {
      }
      rollback_->reset();
    }
    log::error("registry_write_failed", {{"what", "execution records"}, {"error", e.what()}});
    return 0;
  }
}

std::optional<std::string> registry::execution(const std::string& kernel_id,
                                               const std::string& msg_id) const {
  statement st(db_, "SELECT record FROM executions WHERE kernel_id = ?1 AND msg_id = ?2");
  st.bind(1, kernel_id).bind(2, msg_id);
  if (st.step()) return st.text(0);
  return std::nullopt;
}

std::vector<std::string> registry::running_executions(const std::string& kernel_id) const {
  statement st(db_,
               "SELECT record FROM executions WHERE kernel_id = ?1 AND running = 1 ORDER BY finished_at");
  st.bind(1, kernel_id);
  std::vector<std::string> records;
  while (st.step())
    records.push_back(st.text(0));
  return records;
}

}  // namespace sandgate::gateway
