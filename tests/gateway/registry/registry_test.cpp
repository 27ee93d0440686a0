#include "registry/registry.hpp"

#include <gtest/gtest.h>

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <thread>

namespace sandgate::gateway {

// For failure messages (found by argument-dependent lookup).
void PrintTo(const session_row& s, std::ostream* os) {
  *os << "{" << s.id << " " << s.path << " " << s.name << " " << s.type << " " << s.kernel_id << " "
      << s.owner << " " << s.created << "}";
}

namespace {

namespace fs = std::filesystem;
using kind = registry::kind;

class registry_test : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sandgate-registry-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ / "registry.db";
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  fs::path path_;
};

TEST_F(registry_test, records_survive_reopening_and_ended_ones_are_not_live) {
  {
    auto r = registry::open(path_);
    EXPECT_EQ(r->notice(), "created " + path_.string());
    r->put(kind::sandbox, "s1", "", "alice", R"({"ttl":1})");
    r->put(kind::sandbox, "s2", "", "bob", R"({"ttl":2})");
    r->put(kind::kernel, "k1", "s1", "alice", R"({"key":"secret"})");
    r->put(kind::sandbox, "s1", "", "alice", R"({"ttl":3})");  // replaced
    r->end(kind::sandbox, "s2", "deleted");
  }
  auto r = registry::open(path_);
  EXPECT_EQ(r->notice(), "");
  const auto boxes = r->live(kind::sandbox);
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_EQ(boxes[0].id, "s1");
  EXPECT_EQ(boxes[0].owner, "alice");
  EXPECT_EQ(boxes[0].record, R"({"ttl":3})");
  const auto kernels = r->live(kind::kernel);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].parent, "s1");
  EXPECT_EQ(kernels[0].record, R"({"key":"secret"})");
  EXPECT_EQ(r->ended("s2", 0), "deleted");
  EXPECT_EQ(r->ended("s1", 0), std::nullopt);
  EXPECT_EQ(r->ended("s2", std::time(nullptr) + 10), std::nullopt);  // ended before `since`
}

TEST_F(registry_test, an_ended_record_keeps_no_key_and_is_purged_later) {
  auto r = registry::open(path_);
  r->put(kind::kernel, "k1", "s1", "alice", R"({"key":"secret"})");
  r->end(kind::kernel, "k1", "deleted");
  r->end(kind::kernel, "k1", "expired");  // the first end stands
  EXPECT_EQ(r->ended("k1", 0), "deleted");
  r.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT record IS NULL FROM kernels WHERE id = 'k1'", -1, &st, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 1);
  sqlite3_finalize(st);
  sqlite3_close(db);
  r = registry::open(path_);
  r->purge_ended(std::time(nullptr) + 1);
  EXPECT_EQ(r->ended("k1", 0), std::nullopt);
}

TEST_F(registry_test, the_database_is_private_to_its_owner) {
  const mode_t old = ::umask(0);
  auto r = registry::open(path_);
  ::umask(old);
  r->put(kind::sandbox, "s1", "", "alice", "{}");
  for (const auto& p : {path_, fs::path(path_.string() + "-wal")}) {
    struct stat st {};
    ASSERT_EQ(::stat(p.c_str(), &st), 0) << p;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << p;
  }
}

TEST_F(registry_test, a_corrupt_file_is_moved_aside_and_a_new_one_started) {
  std::ofstream(path_) << std::string(8192, 'x');
  auto r = registry::open(path_);
  EXPECT_NE(r->notice().find("unusable"), std::string::npos) << r->notice();
  EXPECT_TRUE(r->live(kind::sandbox).empty());
  EXPECT_EQ(r->schema_version(), 4);
  int aside = 0;
  for (const auto& e : fs::directory_iterator(dir_))
    if (e.path().filename().string().rfind("registry.db.corrupt-", 0) == 0) {
      ++aside;
      EXPECT_EQ(fs::file_size(e.path()), 8192u);
    }
  EXPECT_EQ(aside, 1);
  r->put(kind::sandbox, "s1", "", "alice", "{}");
  EXPECT_EQ(r->live(kind::sandbox).size(), 1u);
}

TEST_F(registry_test, execution_records_are_written_in_the_background_and_read_back) {
  {
    auto r = registry::open(path_);
    const std::string big(3 * 1024 * 1024, 'x');
    r->put_execution("k1", "m1", R"({"status":"ok"})");
    r->put_execution("k1", "m2", big);
    r->put_execution("k2", "m1", R"({"status":"error"})");
    r->flush();
    EXPECT_EQ(r->execution("k1", "m1"), R"({"status":"ok"})");
    EXPECT_EQ(r->execution("k1", "m2"), big);
    EXPECT_EQ(r->execution("k2", "m1"), R"({"status":"error"})");  // same msg_id, other kernel
    EXPECT_EQ(r->execution("k2", "m2"), std::nullopt);
    r->put_execution("k1", "m3", R"({"status":"aborted"})");
  }  // a registry that stops writes what it queued
  auto r = registry::open(path_);
  EXPECT_EQ(r->execution("k1", "m3"), R"({"status":"aborted"})");
  r->purge_ended(std::time(nullptr) + 1);
  EXPECT_EQ(r->execution("k1", "m1"), std::nullopt);
}

TEST_F(registry_test, a_running_execution_is_listed_until_its_end_replaces_it) {
  {
    auto r = registry::open(path_);
    r->put_execution("k1", "m1", R"({"status":"running","n":1})", true);
    r->put_execution("k1", "m2", R"({"status":"running","n":2})", true);
    r->put_execution("k2", "m3", R"({"status":"running","n":3})", true);
    r->put_execution("k1", "m1", R"({"status":"ok","n":1})");
    r->flush();
    EXPECT_EQ(r->running_executions("k1"), std::vector<std::string>{R"({"status":"running","n":2})"});
    EXPECT_EQ(r->execution("k1", "m1"), R"({"status":"ok","n":1})");
  }
  // What a gateway killed meanwhile leaves is there for the next one.
  auto r = registry::open(path_);
  EXPECT_EQ(r->running_executions("k2"), std::vector<std::string>{R"({"status":"running","n":3})"});
  EXPECT_TRUE(r->running_executions("k3").empty());
}

TEST_F(registry_test, a_batch_is_one_transaction_and_the_writer_prepares_its_statements_once) {
  auto r = registry::open(path_, std::chrono::seconds(60));  // only flush() ends a batch
  for (int i = 0; i < 50; ++i)
    r->put_execution("k1", "m" + std::to_string(i), R"({"n":)" + std::to_string(i) + "}");
  r->flush();
  auto stats = r->execution_writer_stats();
  EXPECT_EQ(stats.transactions, 1u);
  EXPECT_EQ(stats.records_written, 50u);
  EXPECT_EQ(stats.statements_prepared, 4u);
  for (int i = 50; i < 60; ++i)
    r->put_execution("k1", "m" + std::to_string(i), R"({"n":)" + std::to_string(i) + "}");
  r->flush();
  stats = r->execution_writer_stats();
  EXPECT_EQ(stats.transactions, 2u);
  EXPECT_EQ(stats.records_written, 60u);
  EXPECT_EQ(stats.statements_prepared, 4u);  // the same statements, reset and bound again
  EXPECT_EQ(r->execution("k1", "m0"), R"({"n":0})");
  EXPECT_EQ(r->execution("k1", "m59"), R"({"n":59})");
}

TEST_F(registry_test, of_one_executions_records_in_a_batch_only_the_last_is_written) {
  auto r = registry::open(path_, std::chrono::seconds(60));
  r->put_execution("k1", "m1", R"({"status":"running"})", true);
  r->put_execution("k1", "m2", R"({"status":"running"})", true);
  r->put_execution("k2", "m1", R"({"status":"running"})", true);  // same msg_id, other kernel
  r->put_execution("k1", "m1", R"({"status":"ok"})");
  r->flush();
  const auto stats = r->execution_writer_stats();
  EXPECT_EQ(stats.transactions, 1u);
  EXPECT_EQ(stats.records_written, 3u);
  EXPECT_EQ(stats.records_superseded, 1u);
  EXPECT_EQ(r->execution("k1", "m1"), R"({"status":"ok"})");
  EXPECT_EQ(r->running_executions("k1"), std::vector<std::string>{R"({"status":"running"})"});
  EXPECT_EQ(r->running_executions("k2"), std::vector<std::string>{R"({"status":"running"})"});
}

TEST_F(registry_test, a_running_record_is_stored_within_the_batch_window_without_a_flush) {
  auto r = registry::open(path_);
  const auto start = std::chrono::steady_clock::now();
  r->put_execution("k1", "m1", R"({"status":"running"})", true);
  while (r->running_executions("k1").empty() &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(5))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(r->running_executions("k1"), std::vector<std::string>{R"({"status":"running"})"});
  // The window (5 ms) plus one commit; generous for a loaded machine.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST_F(registry_test, a_stop_does_not_wait_out_the_batch_window) {
  const auto start = std::chrono::steady_clock::now();
  {
    auto r = registry::open(path_, std::chrono::seconds(60));
    r->put_execution("k1", "m1", R"({"status":"ok"})");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(registry::open(path_)->execution("k1", "m1"), R"({"status":"ok"})");
}

TEST_F(registry_test, session_records_survive_reopening_until_deleted_with_them_or_their_kernel) {
  const session_row a{"s1", "work/a.ipynb", "a.ipynb", "notebook", "k1", "alice", 1000};
  const session_row b{"s2", "b.ipynb", "", "console", "k2", "bob", 1001};
  const session_row c{"s3", "c.ipynb", "c.ipynb", "notebook", "k1", "alice", 1002};
  session_row moved = a;
  moved.path = "work/renamed.ipynb";
  moved.name = "renamed.ipynb";
  moved.kernel_id = "k3";
  {
    auto r = registry::open(path_);
    r->put_session(a);
    r->put_session(b);
    r->put_session(c);
    r->put_session(moved);  // replaces a, keeps its place
    r->delete_session("s2");
    r->delete_session("no-such-session");
  }
  {
    auto r = registry::open(path_);
    EXPECT_EQ(r->sessions(), (std::vector<session_row>{moved, c}));
    r->delete_sessions_of("k1");
  }
  auto r = registry::open(path_);
  EXPECT_EQ(r->sessions(), std::vector<session_row>{moved});
  r->delete_sessions_of("k3");
  EXPECT_TRUE(r->sessions().empty());
}

TEST_F(registry_test, a_registry_of_the_previous_schema_gains_sessions_and_keeps_its_records) {
  // Version 3 as it shipped: sandboxes, kernels, executions with `running`.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  const char* v3 = R"sql(
    CREATE TABLE sandboxes (id TEXT PRIMARY KEY, owner TEXT NOT NULL, record TEXT, ended_at INTEGER,
                            end_reason TEXT);
    CREATE TABLE kernels (id TEXT PRIMARY KEY, sandbox_id TEXT NOT NULL, owner TEXT NOT NULL, record TEXT,
                          ended_at INTEGER, end_reason TEXT);
    CREATE INDEX kernels_by_sandbox ON kernels (sandbox_id);
    CREATE TABLE executions (kernel_id TEXT NOT NULL, msg_id TEXT NOT NULL, record TEXT NOT NULL,
                             finished_at INTEGER NOT NULL, PRIMARY KEY (kernel_id, msg_id));
    CREATE INDEX executions_by_age ON executions (finished_at);
    ALTER TABLE executions ADD COLUMN running INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX executions_running ON executions (kernel_id) WHERE running = 1;
    INSERT INTO sandboxes VALUES ('s1', 'alice', '{"ttl":1}', NULL, NULL);
    INSERT INTO kernels VALUES ('k1', 's1', 'alice', '{"key":"secret"}', NULL, NULL);
    INSERT INTO executions VALUES ('k1', 'm1', '{"status":"running"}', 4102444800, 1);
    PRAGMA user_version = 3;
  )sql";
  ASSERT_EQ(sqlite3_exec(db, v3, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);

  {
    auto r = registry::open(path_);
    EXPECT_EQ(r->notice(), "");  // migrated in place, not set aside
    EXPECT_EQ(r->schema_version(), 4);
    ASSERT_EQ(r->live(kind::sandbox).size(), 1u);
    const auto kernels = r->live(kind::kernel);
    ASSERT_EQ(kernels.size(), 1u);
    EXPECT_EQ(kernels[0].record, R"({"key":"secret"})");
    EXPECT_EQ(r->running_executions("k1"), std::vector<std::string>{R"({"status":"running"})"});
    EXPECT_TRUE(r->sessions().empty());
    r->put_session({"s9", "n.ipynb", "n.ipynb", "notebook", "k1", "alice", 42});
  }
  auto r = registry::open(path_);
  EXPECT_EQ(r->schema_version(), 4);
  EXPECT_EQ(r->sessions(),
            (std::vector<session_row>{{"s9", "n.ipynb", "n.ipynb", "notebook", "k1", "alice", 42}}));
}

TEST_F(registry_test, a_newer_schema_is_not_touched_but_set_aside) {
  {
    auto r = registry::open(path_);
    r->put(kind::sandbox, "s1", "", "alice", "{}");
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto r = registry::open(path_);
  EXPECT_NE(r->notice().find("newer"), std::string::npos) << r->notice();
  EXPECT_TRUE(r->live(kind::sandbox).empty());
}

}  // namespace
}  // namespace sandgate::gateway
