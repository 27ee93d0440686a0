// /mcp: the MCP endpoint (gateway/src/mcp), whose tools call this router's
// REST API as the caller.
#include "router.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/url.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <cerrno>

namespace sandgate::gateway {
namespace http = boost::beast::http;
using json = nlohmann::json;

namespace {

// The response a message_generator writes, read back.
router::response read_back(http::message_generator& gen) {
  std::string raw;
  boost::beast::error_code ec;
  while (!gen.is_done()) {
    const auto buffers = gen.prepare(ec);
    if (ec) break;
    std::size_t n = 0;
    for (const auto& b : buffers) {
      raw.append(static_cast<const char*>(b.data()), b.size());
      n += b.size();
    }
    gen.consume(n);
  }
  http::response_parser<http::string_body> parser;
  parser.body_limit(boost::none);
  parser.eager(true);
  std::size_t used = 0;
  while (!parser.is_done() && !ec) {
    used += parser.put(boost::asio::buffer(raw.data() + used, raw.size() - used), ec);
    if (ec == http::error::need_more) ec = {};
    if (!parser.is_done() && used == raw.size()) parser.put_eof(ec);
  }
  if (!parser.is_done())
    return router::error_response(http::status::internal_server_error, "Unreadable internal answer", 11,
                                  true);
  return parser.release();
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const auto n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

void router::as_mcp_refusal(response& res) {
  // MCP wants 401 for a wrong token as for a missing one, with a Bearer challenge.
  if (res.result() != http::status::unauthorized && res.result() != http::status::forbidden) return;
  const bool wrong = res.result() == http::status::forbidden;
  res.result(http::status::unauthorized);
  res.set(http::field::www_authenticate,
          wrong ? R"(Bearer error="invalid_token", error_description="The token is not valid")" : "Bearer");
  res.set(http::field::content_type, "application/json");
  res.body() =
      json{{"jsonrpc", "2.0"},
           {"error", {{"code", -32001}, {"message", wrong ? "Invalid token" : "A bearer token is required"}}}}
          .dump();
  res.prepare_payload();
}

void router::mcp_request(context& ctx) {
  if (auto refused = refuse_cross_origin(ctx.req)) {
    refused->set(http::field::content_type, "application/json");
    refused->body() =
        json{{"jsonrpc", "2.0"},
             {"error",
              {{"code", -32600},
               {"message", "Origin not allowed: " + std::string(ctx.req[http::field::origin])}}}}
            .dump();
    refused->keep_alive(ctx.req.keep_alive());
    return ctx.reply(std::move(*refused));
  }
  const std::string authorization(ctx.req[http::field::authorization]);
  const std::string query_token = ctx.query.count("token") ? ctx.query["token"] : std::string();
  auto call = [this, authorization, query_token](mcp_server::api_request r,
                                                 const std::function<void(response)>& done) {
    request req{r.method, cfg_.base_url + r.target, 11};
    if (!query_token.empty())
      req.target(std::string(req.target()) + (r.target.find('?') == std::string::npos ? "?" : "&") +
                 "token=" + boost::urls::encode(query_token, boost::urls::unreserved_chars));
    if (!authorization.empty()) req.set(http::field::authorization, authorization);
    req.set(http::field::content_type, "application/json");
    if (!r.range.empty()) req.set(http::field::range, r.range);
    req.keep_alive(true);
    req.body() = std::move(r.body);
    req.prepare_payload();
    auto respond = [done](http::message_generator&& gen) { done(read_back(gen)); };
    if (!is_upload(req)) return handle(std::move(req), std::move(respond));
    begin_upload(req.base(), respond, [this, body = req.body(), done](upload_start start) {
      if (start.rejection) return done(std::move(*start.rejection));
      const bool written = write_all(start.job->file(), body);
      finish_upload(start.job, written ? boost::beast::error_code{}
                                       : boost::beast::error_code(errno, boost::system::generic_category()));
    });
  };
  mcp_->handle(ctx.req, ctx.who.name, std::move(call),
               [self = ctx.shared_from_this()](response res) { self->reply(std::move(res)); });
}

}  // namespace sandgate::gateway
