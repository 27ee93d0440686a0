#include <gateway/config.hpp>

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>

namespace sandgate::gateway {
namespace {

using setter = std::function<void(config&, const std::string&)>;

struct option {
  const char* name;  // long option without "--"; env is SANDGATE_ + upper(name with - as _)
  const char* arg;   // placeholder in --help
  const char* help;
  setter set;
};

template <typename T>
T parse_number(const std::string& name, const std::string& v) {
  T out{};
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size()) throw config_error("--" + name + ": not a number: " + v);
  return out;
}

bool parse_flag(const std::string& name, const std::string& v) {
  if (v == "true" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "no") return false;
  throw config_error("--" + name + ": not true or false: " + v);
}

std::vector<std::string> split_list(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// "ADDR:PORT" or "[V6]:PORT", a numeric address and a port 1-65535.
std::string parse_endpoint(const std::string& name, const std::string& v) {
  const auto colon = v.rfind(':');
  const bool v6 = v.starts_with('[');
  std::string address = colon == std::string::npos ? "" : v.substr(0, colon);
  if (v6 && address.size() >= 2 && address.back() == ']') address = address.substr(1, address.size() - 2);
  unsigned char buf[sizeof(in6_addr)];
  const bool numeric = ::inet_pton(v6 ? AF_INET6 : AF_INET, address.c_str(), buf) == 1;
  unsigned port = 0;
  const char* end = v.data() + v.size();
  const bool port_ok = colon != std::string::npos &&
                       std::from_chars(v.data() + colon + 1, end, port).ptr == end && port >= 1 &&
                       port <= 65535;
  if (!numeric || !port_ok)
    throw config_error("--" + name + ": not ADDR:PORT or [ADDR]:PORT with a numeric address: " + v);
  return v;
}

#define SG_NUM(field) \
  [](config& c, const std::string& v) { c.field = parse_number<decltype(c.field)>(#field, v); }
#define SG_STR(field) [](config& c, const std::string& v) { c.field = v; }
#define SG_FLAG(field) [](config& c, const std::string& v) { c.field = parse_flag(#field, v); }

const std::vector<option>& options() {
  static const std::vector<option> table = {
      {"ip", "ADDR", "address to listen on (default 127.0.0.1)", SG_STR(ip)},
      {"port", "N", "port to listen on; 0 picks a free one (default 8888)", SG_NUM(port)},
      {"auth-token", "TOKEN",
       "token clients must present; unset: generate one and print it once; '' disables auth (loopback only)",
       [](config& c, const std::string& v) { c.auth_token = v; }},
      {"state-dir", "DIR", "where state, run dirs and workspaces live (default ./.sandgate)",
       SG_STR(state_dir)},
      {"default-kernel", "NAME", "kernelspec used when a request names none (default python)",
       SG_STR(default_kernel)},
      {"max-kernels", "N", "most kernels at once, starting ones included (default 64)", SG_NUM(max_kernels)},
      {"allow-origin", "ORIGIN", "CORS Access-Control-Allow-Origin ('*' or an origin; default none)",
       SG_STR(allow_origin)},
      {"base-url", "PREFIX", "URL prefix of every route (default /)", SG_STR(base_url)},
      {"ports-domain", "DOMAIN",
       "sandboxes' ports are served at {port}-{sandbox id}.DOMAIN (a name resolving to this gateway; default "
       "localhost, which browsers resolve to loopback; '' turns the host-name route off)",
       SG_STR(ports_domain)},
      {"certfile", "FILE", "TLS certificate (PEM); with --keyfile serves https", SG_STR(certfile)},
      {"keyfile", "FILE", "TLS private key (PEM)", SG_STR(keyfile)},
      {"tokens-file", "FILE",
       "JSON {\"principals\": [{\"name\", \"token_sha256\", \"admin\", \"quotas\": {\"sandboxes\", "
       "\"kernels\", \"memory_bytes\"}}]}: more tokens, each its own principal (see docs/api.md)",
       SG_STR(tokens_file)},
      {"kernel-path", "DIR[,DIR]", "extra directories holding kernelspecs",
       [](config& c, const std::string& v) {
         for (auto& p : split_list(v))
           c.kernel_paths.emplace_back(p);
       }},
      {"policy", "FILE", "default sandbox policy (default share/sandgate/policies/default.json)",
       SG_STR(policy_file)},
      {"unsandboxed-kernels", "NAME[,NAME]",
       "kernelspecs allowed to run WITHOUT a sandbox (operator opt-out)",
       [](config& c, const std::string& v) { c.unsandboxed_kernels = split_list(v); }},
      {"kernel-env-allow", "NAME[,NAME]",
       "variables a kernel start request's env may set besides KERNEL_* ('*': all; default none): "
       "Jupyter clients send their whole environment, which is dropped",
       [](config& c, const std::string& v) { c.kernel_env_allow = split_list(v); }},
      {"node-id", "N", "this node's number, carried in the first 16 bits of every id (default 0)",
       SG_NUM(node_id)},
      {"host-id-lock-dir", "DIR",
       "host-wide locks of the host uid slots in use, shared by every gateway on the host, so that no two "
       "sandboxes ever share host uids (default /run/sandgate/host-ids)",
       SG_STR(host_id_lock_dir)},
      {"peers", "N=URL[,N=URL]",
       "the cluster's other nodes (e.g. 2=http://10.0.0.2:8888): the lists of kernels, sandboxes and "
       "sessions span them (default none)",
       SG_STR(peers)},
      {"peers-file", "FILE", "the cluster's nodes, one 'N URL' line each, read again when it changes",
       SG_STR(peers_file)},
      {"peer-timeout-ms", "N", "a peer that has not answered a list by then is left out of it (default 500)",
       SG_NUM(peer_timeout_ms)},
      {"agent-check-port", "N",
       "answer HAProxy's agent-check on this port: 'ready N%' (free kernel capacity) or 'drain' when full or "
       "draining (default none)",
       SG_NUM(agent_check_port)},
      {"egress-hosts-file", "FILE",
       "the egress proxy resolves names only from this hosts file (for tests; default: the system's "
       "resolver)",
       SG_STR(egress_hosts_file)},
      {"egress-resolver", "ADDR:PORT",
       "the DNS server the egress proxy asks (UDP), e.g. 127.0.0.53:53 or [::1]:53 (default: the system's "
       "resolver; with --egress-hosts-file, for names not in that file)",
       [](config& c, const std::string& v) { c.egress_resolver = parse_endpoint("egress-resolver", v); }},
      {"log-level", "LEVEL", "debug, info, warn or error (default info)", SG_STR(log_level)},
      {"audit-log", "FILE",
       "audit log, JSON lines appended to FILE (mode 0600; SIGHUP reopens it) (default "
       "<state-dir>/audit.log)",
       SG_STR(audit_log)},
      {"shutdown-kernels-on-exit", "",
       "end every kernel and sandbox on SIGTERM/SIGINT (default: sandboxed ones keep running and the "
       "next gateway on this state dir re-attaches them)",
       SG_FLAG(shutdown_kernels_on_exit)},
      {"http-header-limit-bytes", "N", "largest request header (default 16384)",
       SG_NUM(http_header_limit_bytes)},
      {"http-body-limit-bytes", "N", "largest request body (default 64 MiB)", SG_NUM(http_body_limit_bytes)},
      {"ws-message-limit-bytes", "N", "largest WebSocket message from a client (default 64 MiB)",
       SG_NUM(ws_message_limit_bytes)},
      {"client-queue-limit-bytes", "N",
       "output queued for one slow WebSocket before it is closed (default 256 MiB); past 4 MiB a client "
       "holds back the output of kernels that can wait (Sandgate's own) until it catches up",
       SG_NUM(client_queue_limit_bytes)},
      {"client-stall-timeout-s", "S",
       "a WebSocket more than 4 MiB behind that reads nothing for this long is closed (default 10)",
       SG_NUM(client_stall_timeout_s)},
      {"replay-buffer-limit-bytes", "N", "output kept for a disconnected session_id (default 32 MiB)",
       SG_NUM(replay_buffer_limit_bytes)},
      {"iopub-journal-bytes", "N",
       "what each kernel keeps of its output for a restarted gateway, in its sandbox (default 8 MiB; 0: "
       "none)",
       SG_NUM(iopub_journal_bytes)},
      {"output-memory-limit-bytes", "N",
       "kernel output held in memory, all kernels together; a kernel over its share waits at its socket "
       "(default: an eighth of the host's memory)",
       SG_NUM(output_memory_limit_bytes)},
      {"max-message-bytes", "N",
       "a kernel message larger than this is replaced by a note naming its size (default 128 MiB; 0: none)",
       SG_NUM(max_message_bytes)},
      {"http-idle-timeout-s", "S", "idle HTTP connection timeout (default 300)", SG_NUM(http_idle_timeout_s)},
      {"http-header-timeout-s", "S",
       "a request head must arrive whole within this time of the connection's accept (or TLS handshake), "
       "or of a later request's first byte (default 20)",
       SG_NUM(http_header_timeout_s)},
      {"handshake-timeout-s", "S", "time for a TLS handshake and for a WebSocket's handshakes (default 10)",
       SG_NUM(handshake_timeout_s)},
      {"max-connections", "N",
       "most client connections at once, HTTP and WebSocket; at the limit a new one takes the place of the "
       "one that has waited longest for a request, or is refused; also held within the open-file limit "
       "less 16 descriptors per kernel and 256 (default 4096)",
       SG_NUM(max_connections)},
      {"max-connections-per-address", "N",
       "most client connections from one address (an IPv6 /64) at once; more are refused with 503 (default "
       "256; 0: none, e.g. behind a proxy whose connections all come from one address)",
       SG_NUM(max_connections_per_address)},
      {"kernel-start-timeout-s", "S", "time a kernel has to answer kernel_info (default 60)",
       SG_NUM(kernel_start_timeout_s)},
      {"kernel-shutdown-grace-s", "S", "time between shutdown_request, SIGTERM and SIGKILL (default 3)",
       SG_NUM(kernel_shutdown_grace_s)},
      {"replay-retention-s", "S", "how long a disconnected session_id's output is kept (default 600)",
       SG_NUM(replay_retention_s)},
      {"max-kernel-restarts", "N", "automatic restarts of a dying kernel before it is dead (default 5)",
       SG_NUM(max_kernel_restarts)},
      {"sandbox-idle-timeout-s", "S",
       "cull a sandbox (and its kernels; implicit sandboxes too) idle this long; creators may ask for "
       "less; 0: never (default 0)",
       SG_NUM(sandbox_idle_timeout_s)},
      {"pool", "NAME=N[,NAME=N]",
       "keep at least N started, sandboxed kernels of kernelspec NAME ready; a new kernel or sandbox "
       "takes one (default none)",
       [](config& c, const std::string& v) {
         c.pools.clear();
         for (const auto& item : split_list(v)) {
           const auto eq = item.find('=');
           if (eq == 0 || eq == std::string::npos) throw config_error("--pool: expected NAME=N, got " + item);
           const auto depth = parse_number<unsigned>("pool", item.substr(eq + 1));
           if (depth > 0) c.pools[item.substr(0, eq)] = depth;
         }
       }},
      {"pool-max-depth", "N", "most ready kernels a pool grows to when claims come fast (default 32)",
       SG_NUM(pool_max_depth)},
      {"pool-memory-bytes", "N", "most memory all pools' ready kernels may use together (default 4 GiB)",
       SG_NUM(pool_memory_bytes)},
      {"pool-preload", "MODULE[,MODULE]",
       "modules pool kernels import while they wait, for kernelspecs that declare a preload option "
       "(default none)",
       [](config& c, const std::string& v) { c.pool_preload = split_list(v); }},
  };
  return table;
}

#undef SG_NUM
#undef SG_STR
#undef SG_FLAG

std::string env_name(const std::string& name) {
  std::string out = "SANDGATE_";
  for (char ch : name)
    out.push_back(ch == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(ch))));
  return out;
}

const option* find(std::string_view name) {
  std::string dashed(name);
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  for (const auto& o : options())
    if (dashed == o.name) return &o;
  return nullptr;
}

void apply_file(config& c, const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw config_error("--config: cannot read " + path.string());
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw config_error("--config " + path.string() + ": not JSON: " + e.what());
  }
  if (!j.is_object()) throw config_error("--config " + path.string() + ": must hold a JSON object");
  for (const auto& [key, value] : j.items()) {
    const option* o = find(key);
    if (!o) throw config_error("--config " + path.string() + ": unknown option \"" + key + "\"");
    std::string text;
    if (value.is_string()) {
      text = value.get<std::string>();
    } else if (value.is_array()) {
      for (const auto& item : value)
        text += (text.empty() ? "" : ",") + (item.is_string() ? item.get<std::string>() : item.dump());
    } else {
      text = value.dump();
    }
    o->set(c, text);
  }
}

}  // namespace

std::string config_help() {
  std::ostringstream out;
  out << "usage: sandgate [options]\n\n"
         "Serves the Jupyter Kernel Gateway REST + WebSocket API; every kernel runs in a sandbox.\n"
         "Each option may also be set as an environment variable (shown) or as a key of the\n"
         "JSON object in --config FILE (e.g. {\"port\": 8888, \"max_kernels\": 10}).\n"
         "Precedence: command line, then environment, then config file.\n\n"
         "  --config FILE                     JSON config file (SANDGATE_CONFIG)\n"
         "  --help                            this text\n"
         "  --version                         print the version\n";
  for (const auto& o : options()) {
    std::string left = std::string("  --") + o.name + " " + o.arg;
    if (left.size() < 34) left.resize(34, ' ');
    out << left << " " << o.help << " (" << env_name(o.name) << ")\n";
  }
  return out.str();
}

std::optional<config> parse_config(int argc, char** argv, const std::map<std::string, std::string>& env) {
  std::vector<std::pair<const option*, std::string>> cli;
  std::filesystem::path config_file;
  if (auto it = env.find("SANDGATE_CONFIG"); it != env.end()) config_file = it->second;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << config_help();
      return std::nullopt;
    }
    if (arg == "--version") {
      std::cout << "sandgate 0.1.0\n";
      return std::nullopt;
    }
    if (arg.rfind("--", 0) != 0) throw config_error("unexpected argument: " + arg + " (see --help)");
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
      has_value = true;
    }
    const option* o = name == "config" ? nullptr : find(name);
    if (!has_value && o && *o->arg == '\0') {
      value = "true";  // a flag
    } else if (!has_value) {
      if (i + 1 >= argc) throw config_error("--" + name + " needs a value");
      value = argv[++i];
    }
    if (name == "config") {
      config_file = value;
      continue;
    }
    if (!o) throw config_error("unknown option --" + name + " (see --help)");
    cli.emplace_back(o, value);
  }
  config c;
  if (!config_file.empty()) apply_file(c, config_file);
  for (const auto& o : options())
    if (auto it = env.find(env_name(o.name)); it != env.end()) o.set(c, it->second);
  for (const auto& [o, v] : cli)
    o->set(c, v);
  if (c.base_url.empty() || c.base_url.front() != '/') c.base_url.insert(0, "/");
  if (c.base_url.back() != '/') c.base_url.push_back('/');
  if (c.certfile.empty() != c.keyfile.empty()) throw config_error("--certfile and --keyfile go together");
  if (c.max_kernels == 0) throw config_error("--max-kernels must be at least 1");
  if (c.max_connections == 0) throw config_error("--max-connections must be at least 1");
  if (c.http_header_timeout_s == 0) throw config_error("--http-header-timeout-s must be at least 1");
  if (c.handshake_timeout_s == 0) throw config_error("--handshake-timeout-s must be at least 1");
  if (c.log_level != "debug" && c.log_level != "info" && c.log_level != "warn" && c.log_level != "error")
    throw config_error("--log-level must be debug, info, warn or error, not \"" + c.log_level + "\"");
  return c;
}

}  // namespace sandgate::gateway
