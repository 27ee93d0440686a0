// Command line shared by Sandgate's kernels:
//   <kernel> -f <connection_file> [--preload mod1,mod2] [--language name]
#pragma once

#include <string>
#include <vector>

namespace sandgate::kernels {

struct kernel_options {
  std::string connection_file;               // Jupyter connection file (required)
  std::vector<std::string> preload_modules;  // imported before kernel_info is answered
  std::string language;                      // for a kernel of several languages; empty: its default
  bool show_help = false;
  bool show_version = false;
};

// Parses argv; throws std::invalid_argument naming the offending argument.
kernel_options parse_command_line(int argc, const char* const* argv);

// One usage text for all the kernels.
std::string usage(const std::string& program);

}  // namespace sandgate::kernels
