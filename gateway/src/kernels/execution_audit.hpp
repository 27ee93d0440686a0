#pragma once
// One "execute" line in the audit log for every execution a kernel ends,
// from any client. A REST execute's caller amends its line with who asked
// and a digest of the code it sent; the line is written just after the
// record ends, once that caller (told synchronously) had its say.

#include "../audit/audit_log.hpp"
#include "executions.hpp"

#include <boost/asio/io_context.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace sandgate::gateway {

class kernel;

class execution_audit : public std::enable_shared_from_this<execution_audit> {
 public:
  execution_audit(boost::asio::io_context& io, audit_log& log) : io_(io), log_(log) {}
  // Writes what is still pending.
  ~execution_audit();
  execution_audit(const execution_audit&) = delete;
  execution_audit& operator=(const execution_audit&) = delete;

  // Audits every execution of `k` that ends from now on; `on_end` (may be
  // empty) is told of each end too.
  void watch(kernel& k, std::function<void()> on_end);
  // From the waiter of a REST execute, as its record ends: the caller and
  // the digest and size of the code it sent.
  void amend(const std::string& kernel_id, const std::string& msg_id, const std::string& principal,
             const std::string& code_sha256, std::uint64_t code_bytes);

 private:
  struct pending {
    std::optional<std::string> principal;
    nlohmann::ordered_json fields;
  };
  void on_end(const std::string& kernel_id, const std::string& owner, const std::string& sandbox_id,
              const execution_record& r);
  void write(const std::string& key);

  boost::asio::io_context& io_;
  audit_log& log_;
  std::unordered_map<std::string, pending> pending_;  // by kernel id + "/" + msg_id
};

}  // namespace sandgate::gateway
