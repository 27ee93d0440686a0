// This node within a cluster: GET/PATCH /api/node (its id, capacity and
// drain), and the cluster-wide answer of the list endpoints.
#include "../cluster/cluster_list.hpp"
#include "router.hpp"

#include <gateway/log.hpp>

#include <boost/url/encode.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

#include <charconv>

namespace sandgate::gateway {
namespace http = boost::beast::http;
using json = nlohmann::json;

// ?node=XXXX (four hex digits, as in ids) names the node meant, so that a
// request a balancer routes by it never acts on another: that answers 404.
bool router::meant_for_this_node(context& ctx) {
  const auto it = ctx.query.find("node");
  if (it == ctx.query.end()) return true;
  const std::string& v = it->second;
  unsigned node = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), node, 16);
  if (v.size() != 4 || ec != std::errc() || end != v.data() + v.size()) {
    ctx.reply(
        ctx.error(http::status::bad_request, "?node= takes a node number as four hex digits, e.g. 0003"));
    return false;
  }
  if (node == cfg_.node_id) return true;
  ctx.reply(error_response_with_reason(
      http::status::not_found, "other_node",
      "This is node " + std::to_string(cfg_.node_id) + ", not node " + std::to_string(node),
      ctx.req.version(), ctx.req.keep_alive()));
  return false;
}

void router::get_node(context& ctx) {
  if (!meant_for_this_node(ctx)) return;
  json peers = json::array();
  for (const auto& p : peers_.peers())
    peers.push_back({{"node", p.node}, {"url", p.url}});
  const auto free = kernels_.free_kernel_slots();
  ctx.reply(ctx.json(http::status::ok, {{"node_id", cfg_.node_id},
                                        {"draining", kernels_.draining()},
                                        {"max_kernels", cfg_.max_kernels},
                                        {"free_kernels", free},
                                        {"peers", peers}}));
}

void router::patch_node(context& ctx) {
  if (!meant_for_this_node(ctx)) return;
  if (!ctx.who.admin)
    return ctx.reply(ctx.error(http::status::forbidden, "Only the gateway's own token may drain a node"));
  std::string error;
  auto body = body_object(ctx.req.body(), error);
  if (!body) return ctx.reply(ctx.error(http::status::bad_request, error));
  if (!body->contains("draining") || !(*body)["draining"].is_boolean())
    return ctx.reply(ctx.error(http::status::bad_request, "\"draining\" (true or false) is required"));
  const bool draining = (*body)["draining"].get<bool>();
  if (draining != kernels_.draining()) {
    kernels_.set_draining(draining);
    log::info(draining ? "node_draining" : "node_ready", {{"node", std::to_string(cfg_.node_id)}});
    audit(ctx, draining ? "node.drain" : "node.ready", {{"node", cfg_.node_id}});
  }
  get_node(ctx);
}

void router::reply_list(context& ctx, const std::string& target, json local) {
  const bool node_only =
      ctx.req[scope_header] == "node" || (ctx.query.count("scope") && ctx.query.at("scope") == "node");
  const auto& peers = peers_.peers();
  if (node_only || peers.empty()) return ctx.reply(ctx.json(http::status::ok, local));
  // The peers get the caller's query (filters) but never its token, which
  // goes in the Authorization header instead.
  std::string query;
  for (const auto& [k, v] : ctx.query) {
    if (k == "token" || k == "scope") continue;
    query += query.empty() ? "?" : "&";
    query += boost::urls::encode(k, boost::urls::unreserved_chars) + "=" +
             boost::urls::encode(v, boost::urls::unreserved_chars);
  }
  std::string authorization(ctx.req[http::field::authorization]);
  if (authorization.empty() && ctx.query.count("token")) authorization = "token " + ctx.query.at("token");
  auto self = ctx.shared_from_this();
  list_across(kernels_.io(), peers, target + query, authorization,
              std::chrono::milliseconds(cfg_.peer_timeout_ms), std::move(local),
              [self](const cluster_list& merged) {
                auto res = self->json(http::status::ok, merged.items);
                if (!merged.missing.empty()) {
                  std::string nodes;
                  for (auto n : merged.missing)
                    nodes += (nodes.empty() ? "" : ",") + std::to_string(n);
                  res.set(missing_nodes_header, nodes);
                }
                self->reply(std::move(res));
              });
}

}  // namespace sandgate::gateway
