#pragma once
// Blocking REST calls on a fresh loopback connection each, with the token
// in the Authorization header (Notebook 6 then skips its XSRF check).

#include <string>

namespace sandgate::bench {

struct http_reply {
  unsigned status = 0;
  std::string body;
};

class http_client {
 public:
  http_client(std::string host, std::string port, std::string token)
      : host_(std::move(host)), port_(std::move(port)), token_(std::move(token)) {}

  // method: "GET", "POST", "DELETE". Throws bench_error on I/O failure.
  [[nodiscard]] http_reply request(const std::string& method, const std::string& target,
                                   const std::string& json_body = {}) const;

  [[nodiscard]] const std::string& host() const noexcept { return host_; }
  [[nodiscard]] const std::string& port() const noexcept { return port_; }
  [[nodiscard]] const std::string& token() const noexcept { return token_; }

 private:
  std::string host_;
  std::string port_;
  std::string token_;
};

}  // namespace sandgate::bench
