#include <gateway/kernelspec.hpp>

#include <gateway/log.hpp>

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

namespace sandgate::gateway {
namespace fs = std::filesystem;

std::optional<kernelspec> load_kernelspec(const fs::path& dir) {
  std::ifstream in(dir / "kernel.json");
  if (!in) return std::nullopt;
  std::stringstream buf;
  buf << in.rdbuf();
  kernelspec spec;
  spec.name = dir.filename().string();
  spec.dir = dir;
  spec.raw_json = buf.str();
  try {
    const auto j = nlohmann::json::parse(spec.raw_json);
    spec.argv = j.at("argv").get<std::vector<std::string>>();
    if (spec.argv.empty()) throw std::invalid_argument("argv is empty");
    spec.display_name = j.value("display_name", spec.name);
    spec.language = j.value("language", "");
    spec.interrupt_mode = j.value("interrupt_mode", "signal");
    if (j.contains("env")) spec.env = j.at("env").get<std::map<std::string, std::string>>();
    const auto flag = [&j](const char* name) {  // metadata.sandgate.<name>: true, or false when absent
      const auto at = nlohmann::json::json_pointer(std::string("/metadata/sandgate/") + name);
      return j.contains(at) && j.at(at).is_boolean() && j.at(at).get<bool>();
    };
    spec.iopub_journal = flag("iopub_journal");
    spec.iopub_backpressure = flag("iopub_backpressure");
    const auto preload = nlohmann::json::json_pointer("/metadata/sandgate/preload_option");
    if (j.contains(preload) && j.at(preload).is_string())
      spec.preload_option = j.at(preload).get<std::string>();
  } catch (const std::exception& e) {
    log::warn("kernelspec_invalid", {{"path", (dir / "kernel.json").string()}, {"error", e.what()}});
    return std::nullopt;
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const auto file = entry.path().filename().string();
    if (file != "kernel.json" && entry.is_regular_file(ec)) spec.resources.push_back(file);
  }
  return spec;
}

kernelspec_catalog::kernelspec_catalog(std::vector<fs::path> search_dirs) : dirs_(std::move(search_dirs)) {
  refresh();
}

namespace {
// A file system's clock ticks coarsely (a few ms): a change in the same
// tick as a read leaves the mtime the read saw. What changed this recently
// is read again next time, whatever its stamp (as git treats "racily
// clean" files).
constexpr std::int64_t racy_window_s = 2;
}  // namespace

kernelspec_catalog::file_stamp kernelspec_catalog::file_stamp::of(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {true, st.st_mtim.tv_sec, st.st_mtim.tv_nsec, static_cast<std::int64_t>(st.st_size),
          static_cast<std::int64_t>(st.st_ino)};
}

std::vector<kernelspec_catalog::file_stamp> kernelspec_catalog::stamp() const {
  std::vector<file_stamp> out;
  for (const auto& dir : dirs_)
    out.push_back(file_stamp::of(dir));
  for (const auto& dir : candidates_) {
    out.push_back(file_stamp::of(dir));
    out.push_back(file_stamp::of(dir / "kernel.json"));
  }
  return out;
}

void kernelspec_catalog::refresh() {
  // A spec is added or removed with its directory (the search dir's mtime
  // moves), a logo with its file (the spec dir's), and kernel.json is
  // edited in place or replaced (its own mtime, size or inode): the same
  // stamps mean nothing to read again.
  if (!stamp_.empty() && !racy_ && stamp() == stamp_) return;
  const auto read_at = std::time(nullptr);
  std::map<std::string, kernelspec> found;
  std::vector<fs::path> candidates;
  for (const auto& dir : dirs_) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (!entry.is_directory(ec)) continue;
      candidates.push_back(entry.path());
      const auto name = entry.path().filename().string();
      if (found.count(name)) continue;
      if (auto spec = load_kernelspec(entry.path())) found.emplace(name, std::move(*spec));
    }
  }
  specs_ = std::move(found);
  candidates_ = std::move(candidates);
  stamp_ = stamp();
  racy_ = std::any_of(stamp_.begin(), stamp_.end(),
                      [&](const file_stamp& f) { return f.exists && f.mtime_s >= read_at - racy_window_s; });
}

const kernelspec* kernelspec_catalog::find(const std::string& name) const {
  auto it = specs_.find(name);
  return it == specs_.end() ? nullptr : &it->second;
}

std::vector<fs::path> kernelspec_catalog::default_dirs(const std::vector<fs::path>& extra,
                                                       const fs::path& exe_dir) {
  std::vector<fs::path> dirs(extra);
  if (const char* jp = std::getenv("JUPYTER_PATH")) {
    std::stringstream ss(jp);
    for (std::string item; std::getline(ss, item, ':');)
      if (!item.empty()) dirs.push_back(fs::path(item) / "kernels");
  }
  dirs.push_back(exe_dir / ".." / "share" / "jupyter" / "kernels");
  if (const char* home = std::getenv("HOME")) dirs.push_back(fs::path(home) / ".local/share/jupyter/kernels");
  dirs.push_back("/usr/local/share/jupyter/kernels");
  dirs.push_back("/usr/share/jupyter/kernels");
  for (auto& d : dirs)
    d = d.lexically_normal();
  return dirs;
}

}  // namespace sandgate::gateway
