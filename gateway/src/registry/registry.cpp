#include "registry.hpp"

#include "database.hpp"
#include "statement.hpp"

#include <gateway/log.hpp>

#include <sqlite3.h>
#include <sys/stat.h>

#include <ctime>
#include <stdexcept>

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

const char* table(registry::kind k) {
  return k == registry::kind::sandbox ? "sandboxes" : "kernels";
}

}  // namespace

std::int64_t unix_now() {
  return static_cast<std::int64_t>(std::time(nullptr));
}

sqlite3* open_database(const fs::path& path) {
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

registry::registry(sqlite3* db) : db_(db) {}

std::unique_ptr<registry> registry::open(const fs::path& path,
                                         std::chrono::milliseconds execution_batch_window) {
  const bool existed = fs::exists(path);
  std::unique_ptr<registry> r(new registry(open_database(path)));
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
    std::unique_ptr<registry> fresh(new registry(open_database(path)));
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
