#pragma once
// The audit log: one JSON object per line, appended to a file of its own
// (mode 0600, O_APPEND): who created or deleted what, every execution's
// code digest and outcome, authentication failures. Each line has "time"
// (RFC 3339 UTC, microseconds), "event" and "principal" (null when the
// gateway itself acted, e.g. a cull), then the event's fields. Never give
// it tokens, keys or code: digests and sizes only.

#include <sandboxing/unique_fd.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace sandgate::gateway {

class audit_log {
 public:
  // Opens (creates, 0600) `path` for appending. Throws std::system_error
  // naming the path when it cannot.
  explicit audit_log(std::filesystem::path path);

  // Appends one line. Never throws: a line that cannot be written is
  // dropped, and the first failure of a run of them is logged in the
  // gateway's log. One write(2) per line; no fsync.
  void record(std::string_view event, const std::optional<std::string>& principal,
              const nlohmann::ordered_json& fields = nlohmann::ordered_json::object()) noexcept;
  // Opens the path again (after logrotate moved the file); keeps the old
  // file when the path cannot be opened.
  void reopen();
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  [[nodiscard]] static sandboxing::unique_fd open_file(const std::filesystem::path& path);
  void write_line(const std::string& line);

  std::filesystem::path path_;
  sandboxing::unique_fd fd_;
  bool failing_ = false;       // the last write failed (and was logged)
  bool partial_ = false;       // a line was cut short: the next starts with a newline
  std::uint64_t dropped_ = 0;  // lines lost since the last write that succeeded
};

// Lower-case hex SHA-256 of `data`.
[[nodiscard]] std::string sha256_hex(std::string_view data);

}  // namespace sandgate::gateway
