#pragma once
// What went wrong, in the terms of kernels, sandboxes and workspaces. The API
// (api/router) decides what each kind means in HTTP; nothing below it does.

#include <string>
#include <utility>

namespace sandgate::gateway {

enum class fault {
  invalid,      // the request asks for something malformed or out of bounds
  forbidden,    // not allowed, whoever asks
  not_found,    // no such thing; `reason` may say why an id went (expired, culled, …)
  conflict,     // the thing is of the wrong kind or in the wrong state
  too_large,    // it does not fit (a workspace, an upload)
  over_quota,   // the principal's quota is used up
  at_capacity,  // this node is full or draining: another node may take it
  internal,     // anything else
};

struct domain_error {
  domain_error() = default;
  domain_error(fault k, std::string what, std::string why = {})
      : kind(k), message(std::move(what)), reason(std::move(why)) {}

  fault kind = fault::internal;
  std::string message;
  std::string reason;  // a word for clients; empty: the kind's own
};

}  // namespace sandgate::gateway
