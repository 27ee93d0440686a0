// sandgate-sandbox: runs a command, or a supervisor for the gateway, inside a
// Linux sandbox described by a policy. See docs/policy.md.
#include <fcntl.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "sandboxing/launcher.hpp"
#include "sandboxing/policy.hpp"
#include "timing.hpp"

namespace {

constexpr const char* usage =
    "usage: sandgate-sandbox [--policy FILE] [--id ID] [--run-dir DIR] [--workspace DIR]\n"
    "                        [--host-id-base N] [--host-id-slot N] [--host-id-lock-fd FD]\n"
    "                        [--cgroup-root DIR]\n"
    "                        [--cgroup-parent NAME] [--allow-no-cgroup]\n"
    "                        (--control SOCKET | -- COMMAND [ARG...])\n"
    "       sandgate-sandbox --check-policy FILE\n";

std::string default_policy_path() {
  char exe[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "/usr/share/sandgate/policies/default.json";
  std::string dir(exe, static_cast<std::size_t>(n));
  dir = dir.substr(0, dir.rfind('/'));
  return dir + "/../share/sandgate/policies/default.json";
}

std::uint32_t parse_u32(const std::string& flag, const char* text) {
  char* end = nullptr;
  errno = 0;
  const unsigned long value = std::strtoul(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value > 0xffffffffUL) {
    throw std::invalid_argument(flag + ": not a number: " + text);
  }
  return static_cast<std::uint32_t>(value);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sandgate::sandboxing;
  detail::timing_init();
  detail::timing_mark("outer: main");
  try {
    launch_options options;
    std::string policy_path;
    for (int i = 1; i < argc; ++i) {
      const std::string_view arg = argv[i];
      if (arg == "--") {
        for (int j = i + 1; j < argc; ++j)
          options.command.emplace_back(argv[j]);
        break;
      }
      if (arg == "--help" || arg == "-h") {
        std::fputs(usage, stdout);
        return 0;
      }
      if (arg == "--allow-no-cgroup") {
        options.require_cgroup = false;
        continue;
      }
      if (i + 1 >= argc) throw std::invalid_argument(std::string(arg) + " needs a value");
      const char* value = argv[++i];
      if (arg == "--check-policy") {
        std::printf("%s\n", to_json_text(load_policy(value)).c_str());
        return 0;
      } else if (arg == "--policy") {
        policy_path = value;
      } else if (arg == "--id") {
        options.id = value;
      } else if (arg == "--run-dir") {
        options.run_dir = value;
      } else if (arg == "--workspace") {
        options.workspace_dir = value;
      } else if (arg == "--control") {
        options.control_path = value;
      } else if (arg == "--host-id-base") {
        options.host_id_base = parse_u32("--host-id-base", value);
      } else if (arg == "--host-id-slot") {
        options.host_id_slot = parse_u32("--host-id-slot", value);
      } else if (arg == "--host-id-lock-fd") {
        // The host-wide lock of the slot, taken by whoever chose it: held,
        // unread, by this process and the sandbox's pid 1 until both end,
        // and by none of the programs they run.
        const auto fd = static_cast<int>(parse_u32("--host-id-lock-fd", value));
        const int flags = ::fcntl(fd, F_GETFD);
        if (fd < 3 || flags < 0 || ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC) != 0)
          throw std::invalid_argument("--host-id-lock-fd: " + std::string(value) +
                                      " is not an open descriptor");
      } else if (arg == "--cgroup-root") {
        options.cgroup_root = value;
      } else if (arg == "--cgroup-parent") {
        options.cgroup_parent = value;
      } else {
        throw std::invalid_argument("unknown option " + std::string(arg));
      }
    }
    if (!options.control_path.empty() && !options.command.empty()) {
      throw std::invalid_argument("--control and a command exclude each other");
    }
    if (options.host_id_base == 0) throw std::invalid_argument("--host-id-base: 0 would map to host root");
    options.sandbox_policy = load_policy(policy_path.empty() ? default_policy_path() : policy_path);
    detail::timing_mark("outer: policy loaded");
    return launch(std::move(options));
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "sandgate-sandbox: %s\n%s", e.what(), usage);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sandgate-sandbox: %s\n", e.what());
    return setup_failed_exit;
  }
}
