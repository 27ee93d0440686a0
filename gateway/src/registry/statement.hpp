#pragma once
// A prepared SQLite statement, finalized once: bind, step, read columns,
// reset to run it again with new bindings.

#include <sqlite3.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace sandgate::gateway {

class statement {
 public:
  // `persistent`: kept and run many times (SQLite then allocates it
  // outside its small-object pool).
  statement(sqlite3* db, const char* sql, bool persistent = false) {
    if (sqlite3_prepare_v3(db, sql, -1, persistent ? SQLITE_PREPARE_PERSISTENT : 0, &stmt_, nullptr) !=
        SQLITE_OK) {
      const std::string error = sqlite3_errmsg(db);
      sqlite3_finalize(stmt_);
      throw std::runtime_error("sqlite prepare: " + error);
    }
  }
  ~statement() { sqlite3_finalize(stmt_); }
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;

  // The text is copied (SQLITE_TRANSIENT) unless `borrowed`: then it must
  // outlive the next reset().
  statement& bind(int i, const std::string& text, bool borrowed = false) {
    sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()),
                      borrowed ? SQLITE_STATIC : SQLITE_TRANSIENT);
    return *this;
  }
  statement& bind(int i, std::int64_t n) {
    sqlite3_bind_int64(stmt_, i, n);
    return *this;
  }
  // SQLITE_ROW or SQLITE_DONE; throws on anything else.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw std::runtime_error(std::string("sqlite: ") + sqlite3_errmsg(sqlite3_db_handle(stmt_)));
  }
  [[nodiscard]] std::string text(int col) const {
    const auto* p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }
  [[nodiscard]] std::int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  // Ready to run again; bindings cleared.
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace sandgate::gateway
