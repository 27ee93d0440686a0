#pragma once
// Kernelspec discovery from the Jupyter data paths: JUPYTER_PATH, the
// install's share/jupyter/kernels (found beside the executable), the user
// and system data dirs, and any --kernel-path. The first one found wins.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sandgate::gateway {

struct kernelspec {
  std::string name;
  std::filesystem::path dir;
  std::vector<std::string> argv;
  std::string display_name;
  std::string language;
  std::string interrupt_mode = "signal";  // "signal" or "message"
  std::map<std::string, std::string> env;
  // metadata.sandgate.iopub_journal: the kernel keeps an iopub journal when
  // told where (Sandgate's own kernels do).
  bool iopub_journal = false;
  // metadata.sandgate.iopub_backpressure: the kernel's iopub waits for a
  // subscriber that is behind instead of dropping (ZMQ_XPUB_NODROP, as
  // Sandgate's own kernels do), so the gateway may stop reading it while a
  // client catches up. Other kernels' output is read as fast as it comes.
  bool iopub_backpressure = false;
  // metadata.sandgate.preload_option: the option (e.g. "--preload") that
  // takes a comma-separated list of modules to import at start; empty: none.
  std::string preload_option;
  std::string raw_json;                // kernel.json as on disk, for the REST "spec"
  std::vector<std::string> resources;  // file names beside kernel.json (logos, ...)
};

class kernelspec_catalog {
 public:
  explicit kernelspec_catalog(std::vector<std::filesystem::path> search_dirs);

  // Re-reads the directories when something in them changed since the last
  // read (a stat of each dir and kernel.json decides): done on each listing
  // and start, so new and edited specs appear at once.
  void refresh();

  [[nodiscard]] const std::map<std::string, kernelspec>& all() const noexcept { return specs_; }
  [[nodiscard]] const kernelspec* find(const std::string& name) const;
  [[nodiscard]] const std::vector<std::filesystem::path>& search_dirs() const noexcept { return dirs_; }

  // The standard search dirs: extra, $JUPYTER_PATH, <exe>/../share/jupyter,
  // ~/.local/share/jupyter, /usr/local/share/jupyter, /usr/share/jupyter.
  [[nodiscard]] static std::vector<std::filesystem::path> default_dirs(
      const std::vector<std::filesystem::path>& extra, const std::filesystem::path& exe_dir);

 private:
  // What stat() says of a file that a change to it would change.
  struct file_stamp {
    bool exists = false;
    std::int64_t mtime_s = 0;
    std::int64_t mtime_ns = 0;
    std::int64_t size = 0;
    std::int64_t inode = 0;
    static file_stamp of(const std::filesystem::path& path);
    bool operator==(const file_stamp&) const = default;
  };
  [[nodiscard]] std::vector<file_stamp> stamp() const;

  std::vector<std::filesystem::path> dirs_;  // each a ".../kernels" dir
  std::map<std::string, kernelspec> specs_;
  std::vector<std::filesystem::path> candidates_;  // every subdir seen at the last read
  std::vector<file_stamp> stamp_;                  // stamp() after the last read
  bool racy_ = false;                              // something changed just before the last read: read again
};

// Parses one kernel.json; nothing (and a logged warning) when it is unusable.
[[nodiscard]] std::optional<kernelspec> load_kernelspec(const std::filesystem::path& dir);

}  // namespace sandgate::gateway
