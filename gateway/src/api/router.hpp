#pragma once
// The REST API and the channels upgrade, with the paths, status codes and
// JSON shapes of jupyter_server / Kernel Gateway. Every error is JSON
// {"reason", "message"}; client faults get a 4xx, never a 500.

#include "../kernels/kernel_manager.hpp"
#include "auth.hpp"
#include "sessions.hpp"

#include <gateway/config.hpp>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json_fwd.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sandgate::gateway {

class router {
 public:
  using request = boost::beast::http::request<boost::beast::http::string_body>;
  using response = boost::beast::http::response<boost::beast::http::string_body>;
  using responder = std::function<void(response&&)>;

  router(const config& cfg, kernel_manager& kernels, std::string token);

  void handle(request&& req, responder respond);
  // A WebSocket upgrade: nothing when accepted (the stream is moved into a
  // ws_session), or the rejection to send.
  template <class Stream>
  std::optional<response> upgrade(request& req, Stream& stream);

  static response error_response(boost::beast::http::status status, std::string message, unsigned version,
                                 bool keep_alive);

 private:
  // One request being answered. Asynchronous handlers keep it alive with
  // shared_from_this() until they reply.
  struct context : std::enable_shared_from_this<context> {
    const router* owner = nullptr;
    request req;
    responder respond;
    std::vector<std::string> parts;  // path segments after the base URL
    std::string principal;
    void reply(response&& res);  // adds CORS headers; answers once
    response json(boost::beast::http::status status, const nlohmann::json& body) const;
    response error(boost::beast::http::status status, std::string message) const;
    response empty(boost::beast::http::status status) const;
  };

  std::optional<response> authenticate(const request& req, const std::string& query_token,
                                       std::string& principal);
  void add_cors(const request& req, response& res) const;
  void dispatch(context& ctx);

  void get_api(context& ctx);
  void get_kernelspecs(context& ctx);
  void get_kernelspec(context& ctx, const std::string& name);
  void get_kernelspec_resource(context& ctx, const std::string& name, const std::string& file);
  void list_kernels(context& ctx);
  void post_kernel(context& ctx);
  void get_kernel(context& ctx, const std::string& id);
  void delete_kernel(context& ctx, const std::string& id);
  void interrupt_kernel(context& ctx, const std::string& id);
  void restart_kernel(context& ctx, const std::string& id);
  void list_sessions(context& ctx);
  void post_session(context& ctx);
  void get_session(context& ctx, const std::string& id);
  void patch_session(context& ctx, const std::string& id);
  void delete_session(context& ctx, const std::string& id);

  // The caller's kernel, or nothing (after answering 404).
  std::shared_ptr<kernel> own_kernel(context& ctx, const std::string& id);
  [[nodiscard]] nlohmann::json kernel_model(const kernel& k) const;
  [[nodiscard]] nlohmann::json session_model(const session_record& s) const;
  [[nodiscard]] nlohmann::json kernelspec_model(const kernelspec& spec) const;

  const config& cfg_;
  kernel_manager& kernels_;
  session_store sessions_;
  authenticator auth_;
};

}  // namespace sandgate::gateway
