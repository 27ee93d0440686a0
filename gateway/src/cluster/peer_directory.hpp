#pragma once
// The other nodes of a cluster, from --peers and --peers-file: where to ask
// for their part of a cluster-wide list. The file is read again when its
// modification time changes, so nodes join and leave without a restart.

#include <cstdint>
#include <ctime>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::gateway {

struct peer {
  std::uint16_t node = 0;
  std::string url;   // as configured
  std::string host;  // of the URL
  std::string port;
  std::string base;  // the URL's path, ending in '/'
};

// "N=URL" items separated by commas, spaces or newlines, or "N URL" lines;
// '#' starts a comment. Only http:// URLs. Throws std::invalid_argument
// naming the item that is wrong; a node listed twice is wrong too.
[[nodiscard]] std::vector<peer> parse_peers(std::string_view text);

class peer_directory {
 public:
  // Leaves `self` out. Throws std::invalid_argument on a bad list or file.
  peer_directory(std::uint16_t self, const std::string& inline_peers, std::filesystem::path file);

  // The peers now. A file that changed is read again; one that became
  // unreadable or wrong keeps the last good list (and is logged once, until
  // it changes again).
  [[nodiscard]] const std::vector<peer>& peers();

 private:
  [[nodiscard]] std::vector<peer> read_file() const;
  void merge();

  std::uint16_t self_;
  std::vector<peer> inline_;
  std::vector<peer> from_file_;
  std::vector<peer> all_;
  std::filesystem::path file_;
  std::filesystem::file_time_type file_time_{};
  bool file_error_logged_ = false;  // that the file cannot be read, since it last changed
};

}  // namespace sandgate::gateway
