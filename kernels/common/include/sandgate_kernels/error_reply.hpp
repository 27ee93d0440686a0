// The execute_reply of a cell that failed.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sandgate::kernels {

// {"status": "error", ename, evalue, traceback, ...}. xeus 2.4.1's
// create_error_reply swaps ename and evalue, so the kernels build it here.
nlohmann::json error_reply(const std::string& ename, const std::string& evalue,
                           const std::vector<std::string>& traceback);

}  // namespace sandgate::kernels
