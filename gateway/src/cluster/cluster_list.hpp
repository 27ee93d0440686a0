#pragma once
// Cluster-wide lists: the node that receives GET /api/kernels (or sandboxes,
// sessions) asks every peer for its own part, in parallel, with the caller's
// credentials, and answers with the union. A peer that does not answer with
// a list in time is left out and named.

#include "http_client.hpp"
#include "peer_directory.hpp"

#include <nlohmann/json.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sandgate::gateway {

// The header a node sends its peers (and any client may send) to get only
// that node's part of a list.
inline constexpr const char* scope_header = "X-Sandgate-Scope";
// The header of a cluster-wide list that names the nodes left out of it.
inline constexpr const char* missing_nodes_header = "X-Sandgate-Missing-Nodes";

// Appends the items of `more` (an array of objects with "id") whose id is
// not in `into` yet. A `more` that is not an array adds nothing.
void append_new_items(nlohmann::json& into, const nlohmann::json& more);

struct cluster_list {
  nlohmann::json items = nlohmann::json::array();
  std::vector<std::uint16_t> missing;  // peers that did not answer with a list
};

// `local`: this node's part. `target`: the path below each peer's base URL
// (e.g. "api/kernels"). `authorization`: the caller's header, sent as is.
// `done` runs once, on `io`, when every peer has answered or `timeout` has
// passed.
void list_across(boost::asio::io_context& io, const std::vector<peer>& peers, const std::string& target,
                 const std::string& authorization, std::chrono::milliseconds timeout, nlohmann::json local,
                 std::function<void(cluster_list)> done);

}  // namespace sandgate::gateway
