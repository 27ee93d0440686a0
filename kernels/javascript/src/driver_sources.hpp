// The driver's scripts as built into the kernel (generated: driver_sources.cpp.in).
#pragma once

#include <string_view>
#include <utility>
#include <vector>

namespace sandgate::javascript_kernel {

// (file name, contents) of driver.js, rewrite.js and typescript.js.
const std::vector<std::pair<std::string_view, std::string_view>>& built_in_driver_sources();

}  // namespace sandgate::javascript_kernel
