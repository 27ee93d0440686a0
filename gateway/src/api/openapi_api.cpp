// GET /api/openapi.json: the OpenAPI 3.0 document of every route this
// router serves (share/sandgate/openapi.json, read once at startup).
#include "router.hpp"

#include <gateway/log.hpp>

#include <nlohmann/json.hpp>

#include <fstream>

namespace sandgate::gateway {
namespace http = boost::beast::http;

std::string load_openapi_document(const std::filesystem::path& file, const std::string& base_url) {
  std::ifstream in(file);
  auto doc = nlohmann::ordered_json::parse(in, nullptr, false);
  if (!doc.is_object()) {
    log::error("openapi_unreadable", {{"path", file.string()}});
    return {};
  }
  const std::string server = base_url.size() > 1 ? base_url.substr(0, base_url.size() - 1) : "/";
  nlohmann::ordered_json entry = nlohmann::ordered_json::object();
  entry["url"] = server;
  doc["servers"] = nlohmann::ordered_json::array();
  doc["servers"].push_back(std::move(entry));
  return doc.dump(2);
}

void router::get_openapi(context& ctx) {
  if (openapi_.empty())
    return ctx.reply(ctx.error(http::status::internal_server_error,
                               "The OpenAPI document is not installed (share/sandgate/openapi.json)"));
  auto res = ctx.json(http::status::ok, nlohmann::json::object());
  res.body() = openapi_;
  ctx.reply(std::move(res));
}

}  // namespace sandgate::gateway
