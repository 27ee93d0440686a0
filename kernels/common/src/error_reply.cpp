#include "sandgate_kernels/error_reply.hpp"

namespace sandgate::kernels {

nlohmann::json error_reply(const std::string& ename, const std::string& evalue,
                           const std::vector<std::string>& traceback) {
  return nlohmann::json{{"status", "error"},
                        {"ename", ename},
                        {"evalue", evalue},
                        {"traceback", traceback},
                        {"payload", nlohmann::json::array()},
                        {"user_expressions", nlohmann::json::object()}};
}

}  // namespace sandgate::kernels
