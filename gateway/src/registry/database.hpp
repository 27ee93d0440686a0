#pragma once
// The registry's SQLite database files.

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>

namespace sandgate::gateway {

// Opens (or creates) the database at `path`, mode 0600 whatever the umask:
// records hold connection keys. Throws std::runtime_error naming the path.
sqlite3* open_database(const std::filesystem::path& path);
// Now, in unix seconds.
std::int64_t unix_now();

}  // namespace sandgate::gateway
