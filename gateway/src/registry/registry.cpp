#include "registry.hpp"

#include "statement.hpp"

#include <gateway/log.hpp>

#include <sqlite3.h>
#include <sys/stat.h>

#include <ctime>
#include <stdexcept>
#include <unordered_map>

namespace sandgate::gateway {
namespace fs = std::filesystem;

namespace {

// Each entry moves the schema from version i to i + 1; never edit one that
// has shipped, append another.
constexpr const char* migrations[] = {
    R"sql(
    CREATE TABLE sandboxes (
      id TEXT PRIMARY KEY,
      owner TEXT NOT NULL,
      record TEXT,
      ended_at INTEGER,
      end_reason TEXT
    );
    CREATE TABLE kernels (
      id TEXT PRIMARY KEY,
      sandbox_id TEXT NOT NULL,
      owner TEXT NOT NULL,
      record TEXT,
      ended_at INTEGER,
      end_reason TEXT
    );
    CREATE INDEX kernels_by_sandbox ON kernels (sandbox_id);
    )sql",
    R"sql(
    CREATE TABLE executions (
      kernel_id TEXT NOT NULL,
      msg_id TEXT NOT NULL,
      record TEXT NOT NULL,
      finished_at INTEGER NOT NULL,
      PRIMARY KEY (kernel_id, msg_id)
    );
    CREATE INDEX executions_by_age ON executions (finished_at);
    )sql",
    R"sql(
    ALTER TABLE executions ADD COLUMN running INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX executions_running ON executions (kernel_id) WHERE running = 1;
    )sql",
    R"sql(
    CREATE TABLE sessions (
      id TEXT PRIMARY KEY,
      path TEXT NOT NULL,
      name TEXT NOT NULL,
      type TEXT NOT NULL,
      kernel_id TEXT NOT NULL,
      owner TEXT NOT NULL,
      created INTEGER NOT NULL
    );
    CREATE INDEX sessions_by_kernel ON sessions (kernel_id);
    )sql",
};

std::int64_t unix_now() {
  return static_cast<std::int64_t>(std::time(nullptr));
}

const char* table(registry::kind k) {
  return k == registry::kind::sandbox ? "sandboxes" : "kernels";
}

sqlite3* open_db(const fs::path& path) {
  sqlite3* db = nullptr;
  // Created 0600 whatever the umask: records hold connection keys. SQLite
  // gives the WAL and shared-memory files the database file's mode.
  const mode_t old_mask = ::umask(077);
  const int rc = sqlite3_open_v2(path.c_str(), &db,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  ::umask(old_mask);
  if (rc != SQLITE_OK) {
    const std::string error = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    throw std::runtime_error("cannot open " + path.string() + ": " + error);
  }
  ::chmod(path.c_str(), 0600);
  sqlite3_busy_timeout(db, 2000);
  return db;
}

}  // namespace

registry::registry(sqlite3* db) : db_(db) {}

std::unique_ptr<registry> registry::open(const fs::path& path,
                                         std::chrono::milliseconds execution_batch_window) {
  const bool existed = fs::exists(path);
  std::unique_ptr<registry> r(new registry(open_db(path)));
  try {
    r->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    statement check(r->db_, "PRAGMA quick_check");
    if (!check.step() || check.text(0) != "ok") throw std::runtime_error("quick_check: " + check.text(0));
    r->migrate();
    r->notice_ = existed ? "" : "created " + path.string();
    r->start_writer(path, execution_batch_window);
    return r;
  } catch (const std::exception& e) {
    // Not a database, corrupt, or from a newer gateway: keep it for
    // inspection and start afresh. Sandboxes it knew are not touched.
    const std::string why = e.what();
    r.reset();
    const std::string aside = path.string() + ".corrupt-" + std::to_string(unix_now());
    std::error_code ec;
    fs::rename(path, aside, ec);
    for (const char* suffix : {"-wal", "-shm"})
      fs::rename(path.string() + suffix, aside + suffix, ec);
    std::unique_ptr<registry> fresh(new registry(open_db(path)));
    fresh->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    fresh->migrate();
    fresh->notice_ = "the registry " + path.string() + " was unusable (" + why + "); moved it to " + aside +
                     " and started an empty one";
    fresh->start_writer(path, execution_batch_window);
    return fresh;
  }
}

registry::~registry() {
  if (writer_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    writer_.join();
  }
  begin_.reset();
  commit_.reset();
  rollback_.reset();
  insert_execution_.reset();
  sqlite3_close(writer_db_);
  sqlite3_close(db_);
}

void registry::start_writer(const fs::path& path, std::chrono::milliseconds batch_window) {
  writer_db_ = open_db(path);
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

void registry::exec(const char* sql) const {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    throw std::runtime_error("sqlite: " + message);
  }
}

int registry::schema_version() const {
  statement st(db_, "PRAGMA user_version");
  st.step();
  return static_cast<int>(st.integer(0));
}

void registry::migrate() {
  const int have = schema_version();
  const int want = static_cast<int>(std::size(migrations));
  if (have > want)
    throw std::runtime_error("schema version " + std::to_string(have) + " is newer than this gateway's " +
                             std::to_string(want));
  for (int v = have; v < want; ++v) {
    exec("BEGIN IMMEDIATE");
    try {
      exec(migrations[v]);
      exec(("PRAGMA user_version = " + std::to_string(v + 1)).c_str());
      exec("COMMIT");
    } catch (...) {
      exec("ROLLBACK");
      throw;
    }
  }
}

void registry::put(kind k, const std::string& id, const std::string& parent, const std::string& owner,
                   const std::string& record) {
  try {
    if (k == kind::sandbox) {
      statement st(db_,
                   "INSERT OR REPLACE INTO sandboxes (id, owner, record, ended_at, end_reason) "
                   "VALUES (?1, ?2, ?3, NULL, NULL)");
      st.bind(1, id).bind(2, owner).bind(3, record).step();
    } else {
      statement st(db_,
                   "INSERT OR REPLACE INTO kernels (id, sandbox_id, owner, record, ended_at, end_reason) "
                   "VALUES (?1, ?2, ?3, ?4, NULL, NULL)");
      st.bind(1, id).bind(2, parent).bind(3, owner).bind(4, record).step();
    }
  } catch (const std::exception& e) {
    log::error("registry_write_failed", {{"id", id}, {"error", e.what()}});
  }
}

void registry::end(kind k, const std::string& id, const std::string& reason) {
  try {
    statement st(db_,
                 (std::string("UPDATE ") + table(k) +
                  " SET record = NULL, ended_at = ?2, end_reason = ?3 WHERE id = ?1 AND ended_at IS NULL")
                     .c_str());
    st.bind(1, id).bind(2, unix_now()).bind(3, reason).step();
  } catch (const std::exception& e) {
    log::error("registry_write_failed", {{"id", id}, {"error", e.what()}});
  }
}

std::vector<registry_row> registry::live(kind k) const {
  std::vector<registry_row> rows;
  statement st(
      db_, k == kind::sandbox
               ? "SELECT id, '', owner, record FROM sandboxes WHERE ended_at IS NULL ORDER BY rowid"
               : "SELECT id, sandbox_id, owner, record FROM kernels WHERE ended_at IS NULL ORDER BY rowid");
  while (st.step())
    rows.push_back({st.text(0), st.text(1), st.text(2), st.text(3)});
  return rows;
}

std::optional<std::string> registry::ended(const std::string& id, std::int64_t since) const {
  for (const char* sql : {"SELECT end_reason FROM sandboxes WHERE id = ?1 AND ended_at >= ?2",
                          "SELECT end_reason FROM kernels WHERE id = ?1 AND ended_at >= ?2"}) {
    statement st(db_, sql);
    st.bind(1, id).bind(2, since);
    if (st.step()) return st.text(0);
  }
  return std::nullopt;
}

void registry::purge_ended(std::int64_t before) {
  try {
    for (const char* sql :
         {"DELETE FROM sandboxes WHERE ended_at < ?1", "DELETE FROM kernels WHERE ended_at < ?1",
          "DELETE FROM executions WHERE finished_at < ?1"}) {
      statement st(db_, sql);
      st.bind(1, before).step();
    }
  } catch (const std::exception& e) {
    log::error("registry_write_failed", {{"error", e.what()}});
  }
}

void registry::put_session(const session_row& s) {
  try {
    statement st(db_,
                 "INSERT OR REPLACE INTO sessions (id, path, name, type, kernel_id, owner, created) "
                 "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    st.bind(1, s.id)
        .bind(2, s.path)
        .bind(3, s.name)
        .bind(4, s.type)
        .bind(5, s.kernel_id)
        .bind(6, s.owner)
        .bind(7, s.created)
        .step();
  } catch (const std::exception& e) {
    log::error("registry_write_failed", {{"session_id", s.id}, {"error", e.what()}});
  }
}

void registry::delete_sessions(const char* sql, const char* key, const std::string& value) {
  try {
    statement st(db_, sql);
    st.bind(1, value).step();
  } catch (const std::exception& e) {
    log::error("registry_write_failed", {{key, value}, {"error", e.what()}});
  }
}

void registry::delete_session(const std::string& id) {
  delete_sessions("DELETE FROM sessions WHERE id = ?1", "session_id", id);
}

void registry::delete_sessions_of(const std::string& kernel_id) {
  delete_sessions("DELETE FROM sessions WHERE kernel_id = ?1", "kernel_id", kernel_id);
}

std::vector<session_row> registry::sessions() const {
  std::vector<session_row> rows;
  statement st(
      db_, "SELECT id, path, name, type, kernel_id, owner, created FROM sessions ORDER BY created, rowid");
  while (st.step())
    rows.push_back({st.text(0), st.text(1), st.text(2), st.text(3), st.text(4), st.text(5), st.integer(6)});
  return rows;
}

}  // namespace sandgate::gateway
