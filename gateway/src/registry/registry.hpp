#pragma once
// The gateway's durable registry: one SQLite database (WAL) under the state
// dir holding every sandbox and kernel this node runs, so that a restarted
// gateway re-attaches to them, the /api/sessions records bound to those
// kernels, and the ids that ended (with why) so that they keep answering 404
// with their reason.
//
// Records are JSON texts owned by the part that writes them (the sandbox
// and kernel managers); the registry keys, stores and lists them. The file
// and its WAL are mode 0600: kernel records hold connection keys.
//
// A write that fails (disk full, I/O error) is logged and the gateway goes
// on: the registry is what a restart recovers, not what the running
// gateway reads.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

struct sqlite3;

namespace sandgate::gateway {

class statement;

struct registry_row {
  std::string id;
  std::string parent;  // a kernel's sandbox id; empty for sandboxes
  std::string owner;
  std::string record;  // JSON text
};

// An /api/sessions record: a path (notebook, console) bound to a kernel.
struct session_row {
  std::string id;
  std::string path;
  std::string name;
  std::string type;
  std::string kernel_id;
  std::string owner;
  std::int64_t created = 0;  // unix seconds
  friend bool operator==(const session_row&, const session_row&) = default;
};

class registry {
 public:
  enum class kind { sandbox, kernel };

  // Opens (or creates) the database at `path` and brings its schema up to
  // date. A file that is not a usable database is moved aside to
  // `<path>.corrupt-<unix time>` (its WAL too) and a new one is made; what
  // happened is in `notice()`. Throws when no database can be made.
  // `execution_batch_window`: how long the writer waits after a record is
  // queued for more to join it in one transaction (flush() and the stop
  // cut it short).
  static constexpr std::chrono::milliseconds default_execution_batch_window{5};
  static std::unique_ptr<registry> open(
      const std::filesystem::path& path,
      std::chrono::milliseconds execution_batch_window = default_execution_batch_window);
  ~registry();
  registry(const registry&) = delete;
  registry& operator=(const registry&) = delete;

  // Inserts or replaces a live record.
  void put(kind k, const std::string& id, const std::string& parent, const std::string& owner,
           const std::string& record);
  // Marks a record ended with `reason` ("deleted", "expired", ...); its
  // record text is dropped (keys are not kept past the end).
  void end(kind k, const std::string& id, const std::string& reason);
  [[nodiscard]] std::vector<registry_row> live(kind k) const;
  // Why `id` ended, if it ended at or after `since` (unix seconds).
  [[nodiscard]] std::optional<std::string> ended(const std::string& id, std::int64_t since) const;
  // Forgets ended records older than `before` (unix seconds).
  void purge_ended(std::int64_t before);

  // Inserts or replaces a session record (keyed by its id).
  void put_session(const session_row& s);
  // Deletes one session record; nothing when there is none.
  void delete_session(const std::string& id);
  // Deletes the session records bound to `kernel_id`.
  void delete_sessions_of(const std::string& kernel_id);
  // Every session record, oldest first.
  [[nodiscard]] std::vector<session_row> sessions() const;

  // Execution records, kept for an hour after they end. Written by a
  // thread of the registry's own (a record may hold megabytes of output),
  // in batches: what is queued within the batch window of the oldest
  // queued record goes in one transaction, and of several records of one
  // execution in a batch only the last is written (each replaces the one
  // before). A record queued but not yet written when the process is
  // killed is lost, a stopped registry writes all it queued first.
  // A record put with `running` marks an execution the kernel is still on,
  // for a gateway that restarts meanwhile to take it up; its end replaces it.
  void put_execution(const std::string& kernel_id, const std::string& msg_id, std::string record,
                     bool running = false);
  [[nodiscard]] std::optional<std::string> execution(const std::string& kernel_id,
                                                     const std::string& msg_id) const;
  // The records of a kernel's executions that were running when last written, oldest first.
  [[nodiscard]] std::vector<std::string> running_executions(const std::string& kernel_id) const;
  // Waits until every queued execution record is written.
  void flush();

  // What the execution writer did so far, for tests and diagnostics.
  struct writer_stats {
    std::uint64_t transactions = 0;  // committed, one per batch
    std::uint64_t records_written = 0;
    std::uint64_t records_superseded = 0;  // replaced by a later one in the same batch
    std::uint64_t statements_prepared = 0;
  };
  [[nodiscard]] writer_stats execution_writer_stats();

  [[nodiscard]] int schema_version() const;
  // What open() had to do beyond opening ("created", "moved aside a corrupt
  // database to ..."), for the log.
  [[nodiscard]] const std::string& notice() const noexcept { return notice_; }

 private:
  struct pending_execution {
    std::string kernel_id, msg_id, record;
    bool running = false;
  };

  explicit registry(sqlite3* db);
  // Runs `sql` (a DELETE on sessions) with ?1 = `value`; a failure is logged under `key`.
  void delete_sessions(const char* sql, const char* key, const std::string& value);
  void exec(const char* sql) const;
  void migrate();
  void start_writer(const std::filesystem::path& path, std::chrono::milliseconds batch_window);
  void write_executions();
  // One transaction for `batch`; returns how many records it wrote.
  std::size_t write_batch(const std::deque<pending_execution>& batch);

  sqlite3* db_;
  std::string notice_;
  sqlite3* writer_db_ = nullptr;
  // The writer's statements, prepared once for the life of its connection.
  std::unique_ptr<statement> begin_, commit_, rollback_, insert_execution_;
  std::chrono::milliseconds batch_window_{};
  std::thread writer_;
  std::mutex mutex_;
  std::condition_variable wake_, written_;
  std::deque<pending_execution> queue_;
  std::chrono::steady_clock::time_point oldest_queued_;
  std::size_t in_flight_ = 0;
  int flushing_ = 0;  // callers waiting in flush()
  bool stopping_ = false;
  writer_stats stats_;
};

}  // namespace sandgate::gateway
