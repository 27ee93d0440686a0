#include <gateway/kernelspec.hpp>

#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sandgate::gateway {
namespace {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed at the end.
class temp_dir {
 public:
  temp_dir() {
    std::string tmpl = (fs::temp_directory_path() / "sandgate-specs-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  [[nodiscard]] const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

const char* const full_spec = R"({
  "argv": ["/usr/bin/python3", "-m", "fake", "-f", "{connection_file}"],
  "display_name": "Fake \u00e9 Kernel",
  "language": "python",
  "interrupt_mode": "message",
  "env": {"A": "1", "B": "two"},
  "metadata": {"debugger": false, "sandgate": {"iopub_journal": true, "iopub_backpressure": true,
                                             "preload_option": "--preload"}}
}
)";

TEST(kernelspec, load_reads_every_field_and_keeps_the_raw_text) {
  temp_dir root;
  const auto dir = root.path() / "fake";
  write(dir / "kernel.json", full_spec);
  write(dir / "logo-64x64.png", "\x89PNG");
  write(dir / "kernel.js", "// js");
  fs::create_directories(dir / "subdir");
  const auto spec = load_kernelspec(dir);
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->name, "fake");
  EXPECT_EQ(spec->dir, dir);
  EXPECT_EQ(spec->argv,
            (std::vector<std::string>{"/usr/bin/python3", "-m", "fake", "-f", "{connection_file}"}));
  EXPECT_EQ(spec->display_name, "Fake \xc3\xa9 Kernel");
  EXPECT_EQ(spec->language, "python");
  EXPECT_EQ(spec->interrupt_mode, "message");
  EXPECT_EQ(spec->env, (std::map<std::string, std::string>{{"A", "1"}, {"B", "two"}}));
  EXPECT_EQ(spec->raw_json, full_spec);
  EXPECT_TRUE(spec->iopub_journal);
  EXPECT_TRUE(spec->iopub_backpressure);
  EXPECT_EQ(spec->preload_option, "--preload");
  auto resources = spec->resources;
  std::sort(resources.begin(), resources.end());
  EXPECT_EQ(resources, (std::vector<std::string>{"kernel.js", "logo-64x64.png"}));
}

TEST(kernelspec, load_defaults) {
  temp_dir root;
  write(root.path() / "minimal" / "kernel.json", R"({"argv": ["k"]})");
  const auto spec = load_kernelspec(root.path() / "minimal");
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->display_name, "minimal");
  EXPECT_EQ(spec->language, "");
  EXPECT_EQ(spec->interrupt_mode, "signal");
  EXPECT_TRUE(spec->env.empty());
  EXPECT_TRUE(spec->resources.empty());
  EXPECT_FALSE(spec->iopub_journal);
  EXPECT_FALSE(spec->iopub_backpressure);
  EXPECT_EQ(spec->preload_option, "");
}

TEST(kernelspec, load_rejects_unusable_specs) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"not JSON", "{argv: [}"},
      {"not an object", "[\"k\"]"},
      {"no argv", R"({"display_name": "x"})"},
      {"empty argv", R"({"argv": []})"},
      {"argv not strings", R"({"argv": ["k", 1]})"},
      {"argv a string", R"({"argv": "k -f {connection_file}"})"},
      {"env not strings", R"({"argv": ["k"], "env": {"A": 1}})"},
      {"display_name not a string", R"({"argv": ["k"], "display_name": 3})"},
  };
  temp_dir root;
  for (const auto& [what, text] : cases) {
    SCOPED_TRACE(what);
    const auto dir = root.path() / what;
    write(dir / "kernel.json", text);
    EXPECT_FALSE(load_kernelspec(dir).has_value());
  }
  fs::create_directories(root.path() / "empty");
  EXPECT_FALSE(load_kernelspec(root.path() / "empty").has_value());
  EXPECT_FALSE(load_kernelspec(root.path() / "does-not-exist").has_value());
}

TEST(kernelspec, catalog_first_directory_wins_and_bad_specs_are_skipped) {
  temp_dir first, second;
  write(first.path() / "shared" / "kernel.json", R"({"argv": ["first"]})");
  write(second.path() / "shared" / "kernel.json", R"({"argv": ["second"]})");
  write(second.path() / "only-second" / "kernel.json", R"({"argv": ["k2"], "display_name": "Two"})");
  write(first.path() / "broken" / "kernel.json", "nope");
  write(second.path() / "broken" / "kernel.json", R"({"argv": ["fallback"]})");
  write(first.path() / "stray-file", "not a directory");
  fs::create_directories(first.path() / "no-kernel-json");

  kernelspec_catalog catalog({first.path(), second.path(), first.path() / "missing"});
  std::vector<std::string> names;
  for (const auto& [name, spec] : catalog.all())
    names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"broken", "only-second", "shared"}));
  ASSERT_NE(catalog.find("shared"), nullptr);
  EXPECT_EQ(catalog.find("shared")->argv, std::vector<std::string>{"first"});
  EXPECT_EQ(catalog.find("shared")->dir, first.path() / "shared");
  EXPECT_EQ(catalog.find("broken")->argv, std::vector<std::string>{"fallback"});
  EXPECT_EQ(catalog.find("only-second")->display_name, "Two");
  EXPECT_EQ(catalog.find("no-kernel-json"), nullptr);
  EXPECT_EQ(catalog.find("nope"), nullptr);
  EXPECT_EQ(catalog.find(""), nullptr);
}

TEST(kernelspec, refresh_sees_new_changed_and_removed_specs) {
  temp_dir root;
  kernelspec_catalog catalog({root.path()});
  EXPECT_TRUE(catalog.all().empty());
  write(root.path() / "a" / "kernel.json", R"({"argv": ["a1"]})");
  EXPECT_EQ(catalog.find("a"), nullptr);  // not until refresh
  catalog.refresh();
  ASSERT_NE(catalog.find("a"), nullptr);
  write(root.path() / "a" / "kernel.json", R"({"argv": ["a2"]})");
  write(root.path() / "b" / "kernel.json", R"({"argv": ["b"]})");
  catalog.refresh();
  EXPECT_EQ(catalog.find("a")->argv, std::vector<std::string>{"a2"});
  EXPECT_NE(catalog.find("b"), nullptr);
  fs::remove_all(root.path() / "a");
  catalog.refresh();
  EXPECT_EQ(catalog.find("a"), nullptr);
  EXPECT_EQ(catalog.all().size(), 1u);
}

TEST(kernelspec, refresh_reads_again_only_what_changed) {
  temp_dir root;
  write(root.path() / "a" / "kernel.json", R"({"argv": ["a1"]})");
  // Written an hour ago: past the window in which a stamp is not trusted.
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const auto& p : {root.path() / "a" / "kernel.json", root.path() / "a", root.path()})
    fs::last_write_time(p, old);
  kernelspec_catalog catalog({root.path()});
  const kernelspec* read = catalog.find("a");
  ASSERT_NE(read, nullptr);
  catalog.refresh();
  EXPECT_EQ(catalog.find("a"), read);  // nothing changed: the same entry, not read again
  EXPECT_EQ(catalog.find("a")->argv, std::vector<std::string>{"a1"});
  write(root.path() / "a" / "kernel.json", R"({"argv": ["a2"]})");  // the same size, a new mtime
  catalog.refresh();
  EXPECT_EQ(catalog.find("a")->argv, std::vector<std::string>{"a2"});
  // A change in the same file-system tick as the read before it is still seen.
  write(root.path() / "a" / "kernel.json", R"({"argv": ["a3"]})");
  catalog.refresh();
  EXPECT_EQ(catalog.find("a")->argv, std::vector<std::string>{"a3"});
  write(root.path() / "b" / "kernel.json", R"({"argv": ["b"]})");
  catalog.refresh();
  EXPECT_NE(catalog.find("b"), nullptr);
}

// Sets an environment variable for the test's duration.
class scoped_env {
 public:
  scoped_env(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~scoped_env() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(kernelspec, default_dirs_in_jupyter_order) {
  scoped_env jp("JUPYTER_PATH", "/jp/one::/jp/two");
  scoped_env home("HOME", "/home/someone");
  const auto dirs = kernelspec_catalog::default_dirs({"/extra/kernels"}, "/opt/sandgate/bin");
  const std::vector<fs::path> expected = {
      "/extra/kernels",
      "/jp/one/kernels",
      "/jp/two/kernels",
      "/opt/sandgate/share/jupyter/kernels",
      "/home/someone/.local/share/jupyter/kernels",
      "/usr/local/share/jupyter/kernels",
      "/usr/share/jupyter/kernels",
  };
  EXPECT_EQ(dirs, expected);
}

TEST(kernelspec, default_dirs_without_jupyter_path_or_home) {
  scoped_env jp("JUPYTER_PATH", nullptr);
  scoped_env home("HOME", nullptr);
  const auto dirs = kernelspec_catalog::default_dirs({}, "/opt/sandgate/bin");
  const std::vector<fs::path> expected = {
      "/opt/sandgate/share/jupyter/kernels",
      "/usr/local/share/jupyter/kernels",
      "/usr/share/jupyter/kernels",
  };
  EXPECT_EQ(dirs, expected);
}

TEST(kernelspec, extra_dir_shadows_a_system_spec) {
  temp_dir extra;
  write(extra.path() / "python3" / "kernel.json", R"({"argv": ["mine"], "display_name": "Mine"})");
  kernelspec_catalog catalog(kernelspec_catalog::default_dirs({extra.path()}, "/nonexistent/bin"));
  ASSERT_NE(catalog.find("python3"), nullptr);
  EXPECT_EQ(catalog.find("python3")->display_name, "Mine");
}

}  // namespace
}  // namespace sandgate::gateway
