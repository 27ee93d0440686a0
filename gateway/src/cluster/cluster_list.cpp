#include "cluster_list.hpp"

#include "../util/json_input.hpp"

#include <gateway/log.hpp>

#include <algorithm>
#include <memory>
#include <set>

namespace sandgate::gateway {
using json = nlohmann::json;

void append_new_items(json& into, const json& more) {
  if (!more.is_array()) return;
  std::set<std::string> ids;
  for (const auto& item : into)
    if (item.is_object() && item.contains("id") && item["id"].is_string())
      ids.insert(item["id"].get<std::string>());
  for (const auto& item : more) {
    if (!item.is_object() || !item.contains("id") || !item["id"].is_string()) continue;
    if (ids.insert(item["id"].get<std::string>()).second) into.push_back(item);
  }
}

void list_across(boost::asio::io_context& io, const std::vector<peer>& peers, const std::string& target,
                 const std::string& authorization, std::chrono::milliseconds timeout, json local,
                 std::function<void(cluster_list)> done) {
  struct gather {
    cluster_list result;
    std::vector<json> parts;  // in the peers' order, so a list reads the same each time
    std::vector<std::uint16_t> nodes;
    std::size_t pending = 0;
    std::function<void(cluster_list)> done;
  };
  auto g = std::make_shared<gather>();
  g->result.items = local.is_array() ? std::move(local) : json::array();
  g->parts.resize(peers.size());
  g->pending = peers.size();
  g->done = std::move(done);
  if (peers.empty()) return g->done(std::move(g->result));
  std::vector<std::pair<std::string, std::string>> headers = {{scope_header, "node"}};
  if (!authorization.empty()) headers.emplace_back("Authorization", authorization);
  for (std::size_t i = 0; i < peers.size(); ++i) {
    g->nodes.push_back(peers[i].node);
    http_get(io, peers[i], target, headers, timeout, [g, i, node = peers[i].node](const http_reply& r) {
      json part = r.error || r.status != 200 ? json() : parse_json(r.body);
      if (!part.is_array()) {
        log::warn("peer_list_missing",
                  {{"node", std::to_string(node)},
                   {"error", r.error ? r.error.message() : "status " + std::to_string(r.status)}});
        g->result.missing.push_back(node);
      } else {
        g->parts[i] = std::move(part);
      }
      if (--g->pending > 0) return;
      for (const auto& p : g->parts)
        append_new_items(g->result.items, p);
      std::sort(g->result.missing.begin(), g->result.missing.end());
      g->done(std::move(g->result));
    });
  }
}

}  // namespace sandgate::gateway
