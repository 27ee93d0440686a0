#include "sandgate_kernels/command_line.hpp"

#include <stdexcept>
#include <string_view>

namespace sandgate::kernels {
namespace {

std::vector<std::string> split_list(std::string_view list) {
  std::vector<std::string> items;
  while (!list.empty()) {
    const auto comma = list.find(',');
    const auto item = list.substr(0, comma);
    if (!item.empty()) {
      items.emplace_back(item);
    }
    if (comma == std::string_view::npos) {
      break;
    }
    list.remove_prefix(comma + 1);
  }
  return items;
}

// Accepts "--name value" and "--name=value"; returns true when arg matched.
bool take_value(std::string_view arg, std::string_view name, int& i, int argc, const char* const* argv,
                std::string& value) {
  if (arg == name) {
    if (i + 1 >= argc) {
      throw std::invalid_argument("missing value after " + std::string(name));
    }
    value = argv[++i];
    return true;
  }
  if (arg.size() > name.size() && arg.starts_with(name) && arg[name.size()] == '=') {
    value = std::string(arg.substr(name.size() + 1));
    return true;
  }
  return false;
}

}  // namespace

kernel_options parse_command_line(int argc, const char* const* argv) {
  kernel_options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    std::string value;
    if (arg == "-h" || arg == "--help") {
      options.show_help = true;
    } else if (arg == "--version") {
      options.show_version = true;
    } else if (take_value(arg, "-f", i, argc, argv, value) ||
               take_value(arg, "--connection-file", i, argc, argv, value)) {
      options.connection_file = value;
    } else if (take_value(arg, "--language", i, argc, argv, value)) {
      options.language = value;
    } else if (take_value(arg, "--preload", i, argc, argv, value)) {
      for (auto& module : split_list(value)) {
        options.preload_modules.push_back(std::move(module));
      }
    } else {
      throw std::invalid_argument("unknown argument: " + std::string(arg));
    }
  }
  if (options.connection_file.empty() && !options.show_help && !options.show_version) {
    throw std::invalid_argument("a connection file is required (-f <file>)");
  }
  return options;
}

std::string usage(const std::string& program) {
  return "usage: " + program +
         " -f <connection_file> [--preload mod1,mod2] [--language name]\n"
         "  -f, --connection-file  Jupyter connection file (tcp or ipc transport)\n"
         "  --preload              modules to import before the kernel reports ready\n"
         "  --language             the language of a kernel that has several (sandgate-javascript:\n"
         "                         javascript or typescript)\n"
         "  --version              print the version and exit\n";
}

}  // namespace sandgate::kernels
