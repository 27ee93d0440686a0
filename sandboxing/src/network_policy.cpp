#include "sandboxing/network_policy.hpp"

#include <algorithm>
#include <set>

namespace sandgate::sandboxing {
namespace {

using json = nlohmann::json;

constexpr std::size_t max_entries = 1024;

[[noreturn]] void fail(const std::string& field, const std::string& message) {
  throw policy_error("policy: " + field + ": " + message);
}

network_mode parse_mode(const json& v, const std::string& field) {
  if (!v.is_string()) fail(field, "must be \"none\", \"loopback\", \"allow\" or \"open\"");
  const auto& s = v.get_ref<const std::string&>();
  if (s == "none") return network_mode::none;
  if (s == "loopback") return network_mode::loopback;
  if (s == "allow") return network_mode::allow;
  if (s == "open") return network_mode::open;
  fail(field, "must be \"none\", \"loopback\", \"allow\" or \"open\", not \"" + s + "\"");
}

const json& array_of(const json& object, const char* key, const std::string& field) {
  const auto& v = object.at(key);
  if (!v.is_array()) fail(field + "." + key, "must be an array");
  if (v.size() > max_entries)
    fail(field + "." + key, "must have at most " + std::to_string(max_entries) + " entries");
  return v;
}

std::uint64_t positive(const json& v, const std::string& field, std::uint64_t maximum) {
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() == 0) fail(field, "must be a positive integer");
  if (v.get<std::uint64_t>() > maximum) fail(field, "must be at most " + std::to_string(maximum));
  return v.get<std::uint64_t>();
}

// An array of ports 1-65535, sorted, each once.
std::vector<std::uint16_t> port_list(const json& object, const char* key, const std::string& field) {
  const auto& ports = array_of(object, key, field);
  std::vector<std::uint16_t> out;
  for (std::size_t i = 0; i < ports.size(); ++i)
    out.push_back(static_cast<std::uint16_t>(
        positive(ports[i], field + "." + key + "[" + std::to_string(i) + "]", 65535)));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

std::string normalize_host(std::string_view host) {
  std::string out(host);
  if (!out.empty() && out.back() == '.') out.pop_back();
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool valid_host_pattern(std::string_view pattern) {
  std::string_view name = pattern.starts_with("*.") ? pattern.substr(2) : pattern;
  if (name.empty() || name.size() > 253) return false;
  std::size_t label = 0;
  for (std::size_t i = 0; i <= name.size(); ++i) {
    if (i == name.size() || name[i] == '.') {
      if (label == 0 || label > 63 || name[i - 1] == '-') return false;
      label = 0;
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (!std::isalnum(c) && c != '-' && c != '_') return false;
    if (label == 0 && c == '-') return false;
    ++label;
  }
  return true;
}

bool host_matches(std::string_view pattern, std::string_view host) {
  if (pattern.starts_with("*.")) {
    const std::string_view suffix = pattern.substr(1);  // ".example.com"
    return host.size() > suffix.size() && host.ends_with(suffix);
  }
  return pattern == host;
}

network_policy parse_network_policy(const json& value, const std::string& field) {
  network_policy p;
  if (value.is_string()) {
    p.mode = parse_mode(value, field);
    return p;
  }
  if (!value.is_object())
    fail(field, "must be a mode (\"none\", \"loopback\", \"allow\", \"open\") or an object");
  static const std::set<std::string> known = {"mode",          "hosts",           "cidrs",           "ports",
                                              "non_tls_ports", "max_connections", "bytes_per_second"};
  for (const auto& [key, v] : value.items())
    if (!known.contains(key)) fail(field + "." + key, "unknown field");
  if (!value.contains("mode")) fail(field + ".mode", "is required");
  p.mode = parse_mode(value.at("mode"), field + ".mode");
  if (value.contains("hosts")) {
    const auto& hosts = array_of(value, "hosts", field);
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      const std::string where = field + ".hosts[" + std::to_string(i) + "]";
      if (!hosts[i].is_string()) fail(where, "must be a string");
      const std::string host = normalize_host(hosts[i].get<std::string>());
      if (parse_ip(host)) fail(where, "\"" + host + "\" is an IP address: put it in cidrs");
      if (!valid_host_pattern(host))
        fail(where, "\"" + host + "\" is not a host name or \"*.\" followed by one");
      p.hosts.push_back(host);
    }
    if (p.mode != network_mode::allow && !p.hosts.empty())
      fail(field + ".hosts", "only mode \"allow\" takes hosts (\"open\" allows every public name)");
  }
  if (value.contains("cidrs")) {
    const auto& cidrs = array_of(value, "cidrs", field);
    for (std::size_t i = 0; i < cidrs.size(); ++i) {
      const std::string where = field + ".cidrs[" + std::to_string(i) + "]";
      if (!cidrs[i].is_string()) fail(where, "must be a string");
      const auto n = parse_network(cidrs[i].get<std::string>());
      if (!n)
        fail(where, "\"" + cidrs[i].get<std::string>() +
                        "\" is not an address or ADDRESS/PREFIX with zero host bits");
      p.cidrs.push_back(*n);
    }
  }
  if (value.contains("ports")) p.ports = port_list(value, "ports", field);
  if (value.contains("non_tls_ports")) {
    p.non_tls_ports = port_list(value, "non_tls_ports", field);
    for (auto port : p.non_tls_ports)
      if (!std::binary_search(p.ports.begin(), p.ports.end(), port))
        fail(field + ".non_tls_ports", "port " + std::to_string(port) + " is not in ports");
  }
  if (value.contains("max_connections"))
    p.max_connections =
        static_cast<std::uint32_t>(positive(value.at("max_connections"), field + ".max_connections", 65536));
  if (value.contains("bytes_per_second"))
    p.bytes_per_second = positive(value.at("bytes_per_second"), field + ".bytes_per_second", 1ull << 40);
  return p;
}

std::map<std::string, std::string> egress_proxy_env() {
  const std::string proxy = "http://127.0.0.1:" + std::to_string(egress_proxy_port);
  return {{"HTTP_PROXY", proxy},
          {"HTTPS_PROXY", proxy},
          {"http_proxy", proxy},
          {"https_proxy", proxy},
          {"NO_PROXY", "localhost,127.0.0.1"},
          {"no_proxy", "localhost,127.0.0.1"}};
}

std::string_view to_string(network_mode mode) {
  switch (mode) {
    case network_mode::none:
      return "none";
    case network_mode::loopback:
      return "loopback";
    case network_mode::allow:
      return "allow";
    case network_mode::open:
      return "open";
  }
  return "none";
}

json to_json(const network_policy& p) {
  if (!egress_on(p)) return std::string(to_string(p.mode));
  json cidrs = json::array();
  for (const auto& c : p.cidrs)
    cidrs.push_back(to_string(c));
  return {{"mode", to_string(p.mode)},
          {"hosts", p.hosts},
          {"cidrs", cidrs},
          {"ports", p.ports},
          {"non_tls_ports", p.non_tls_ports},
          {"max_connections", p.max_connections},
          {"bytes_per_second", p.bytes_per_second}};
}

std::optional<std::string> exceeds(const network_policy& wanted, const network_policy& ceiling) {
  const std::string outside = " is outside this gateway's network ceiling";
  if (wanted.mode > ceiling.mode)
    return "network mode \"" + std::string(to_string(wanted.mode)) + "\"" + outside + " (at most \"" +
           std::string(to_string(ceiling.mode)) + "\")";
  if (!egress_on(wanted)) return std::nullopt;
  if (ceiling.mode == network_mode::allow)
    for (const auto& host : wanted.hosts) {
      // A wanted "*.a.example" is covered by the ceiling's "*.a.example" or "*.example".
      const std::string_view probe = host.starts_with("*.") ? std::string_view(host).substr(1) : host;
      const bool covered = std::any_of(ceiling.hosts.begin(), ceiling.hosts.end(), [&](const std::string& c) {
        return c == host || (c.starts_with("*.") && probe.size() > c.size() - 1 &&
                             probe.ends_with(std::string_view(c).substr(1)));
      });
      if (!covered) return "host " + host + outside;
    }
  for (const auto& cidr : wanted.cidrs) {
    // "open" covers a public range of itself; a refused one must be in the ceiling's cidrs.
    const auto special = special_range_of(cidr.base);
    const bool public_open =
        ceiling.mode == network_mode::open && !special && cidr.prefix >= (cidr.base.v4 ? 8u : 16u);
    const bool covered = public_open || std::any_of(ceiling.cidrs.begin(), ceiling.cidrs.end(),
                                                    [&](const ip_network& c) { return c.contains(cidr); });
    if (!covered) return "cidr " + to_string(cidr) + outside;
  }
  for (auto port : wanted.ports)
    if (std::find(ceiling.ports.begin(), ceiling.ports.end(), port) == ceiling.ports.end())
      return "port " + std::to_string(port) + outside;
  for (auto port : wanted.non_tls_ports)
    if (std::find(ceiling.non_tls_ports.begin(), ceiling.non_tls_ports.end(), port) ==
        ceiling.non_tls_ports.end())
      return "non_tls_ports " + std::to_string(port) + outside;
  if (wanted.max_connections > ceiling.max_connections)
    return "max_connections " + std::to_string(wanted.max_connections) + outside + " (at most " +
           std::to_string(ceiling.max_connections) + ")";
  if (wanted.bytes_per_second > ceiling.bytes_per_second)
    return "bytes_per_second " + std::to_string(wanted.bytes_per_second) + outside + " (at most " +
           std::to_string(ceiling.bytes_per_second) + ")";
  return std::nullopt;
}

}  // namespace sandgate::sandboxing
