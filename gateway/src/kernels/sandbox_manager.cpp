#include "sandbox_manager.hpp"

#include "../util/metrics.hpp"

#include "host_sandbox.hpp"
#include "supervised_sandbox.hpp"

#include <gateway/ids.hpp>
#include <gateway/log.hpp>

#include <boost/asio/local/stream_protocol.hpp>

#include <sys/mount.h>
#include <sys/socket.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>

namespace sandgate::gateway {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr std::size_t max_metadata_entries = 64;
constexpr std::size_t max_metadata_bytes = 256;
constexpr std::size_t max_gone_ids = 10000;
constexpr auto gone_retention = std::chrono::hours(1);

// True when the sandbox's read-only system binds already show `path`.
bool visible_in_sandbox(const fs::path& path) {
  for (const char* root : {"/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/lib32/"})
    if (path.string().rfind(root, 0) == 0) return true;
  return false;
}

template <class T>
bool read_number(const json& body, const char* key, std::optional<T>& out, std::string& error) {
  if (!body.contains(key) || body[key].is_null()) return true;
  const auto& v = body[key];
  if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>())) {
      error = std::string("\"") + key + "\" must be a positive number";
      return false;
    }
    out = v.get<T>();
  } else {
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() == 0) {
      error = std::string("\"") + key + "\" must be a positive integer";
      return false;
    }
    out = v.get<T>();
  }
  return true;
}

bool read_string_map(const json& body, const char* key, std::map<std::string, std::string>& out,
                     std::size_t max_entries, std::size_t max_bytes, bool names_are_identifiers,
                     std::string& error) {
  if (!body.contains(key) || body[key].is_null()) return true;
  const auto& m = body[key];
  if (!m.is_object() || m.size() > max_entries) {
    error = std::string("\"") + key + "\" must be an object of at most " + std::to_string(max_entries) +
            " string values";
    return false;
  }
  for (const auto& [k, v] : m.items()) {
    if (!v.is_string() || k.empty() || k.size() > max_bytes ||
        v.get_ref<const std::string&>().size() > max_bytes || (names_are_identifiers && !is_env_name(k))) {
      error = std::string("\"") + key + "\": bad entry \"" + k + "\"";
      return false;
    }
    out[k] = v.get<std::string>();
  }
  return true;
}

std::int64_t unix_now() {
  return static_cast<std::int64_t>(std::time(nullptr));
}

// A sandbox's registry record: what a later gateway needs to take it back.
json to_record(const sandbox_entry& s) {
  return {{"implicit", s.implicit},
          {"pooled", s.pooled},
          {"unsandboxed", s.unsandboxed},
          {"created_us",
           std::chrono::duration_cast<std::chrono::microseconds>(s.created.time_since_epoch()).count()},
          {"expires_at", s.expires_at},
          {"idle_timeout_s", s.idle_timeout_s},
          {"max_execution_s", s.max_execution_s},
          {"metadata", s.metadata},
          {"limits",
           {{"memory_bytes", s.limits.memory_bytes},
            {"cpu", s.limits.cpu},
            {"pids", s.limits.pids},
            {"workspace_bytes", s.limits.workspace_bytes}}},
          {"network", sandboxing::to_json(s.network)},
          {"egress_forwarder", s.egress_forwarder},
          {"env", s.env},
          {"program_dirs", s.program_dirs},
          {"slot", s.slot},
          {"root_pid", s.root_pid}};
}

// Throws (nlohmann::json::exception) on a record this gateway cannot read.
std::shared_ptr<sandbox_entry> from_record(const registry_row& row) {
  const json r = json::parse(row.record);
  auto s = std::make_shared<sandbox_entry>();
  s->id = row.id;
  s->owner = row.owner;
  s->implicit = r.at("implicit").get<bool>();
  s->pooled = r.value("pooled", false);
  s->unsandboxed = r.at("unsandboxed").get<bool>();
  s->created =
      std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::microseconds(r.at("created_us").get<std::int64_t>())));
  s->expires_at = r.at("expires_at").get<std::int64_t>();
  s->idle_timeout_s = r.at("idle_timeout_s").get<std::uint64_t>();
  s->max_execution_s = r.at("max_execution_s").get<std::uint64_t>();
  s->metadata = r.at("metadata").get<std::map<std::string, std::string>>();
  const auto& l = r.at("limits");
  s->limits = {l.at("memory_bytes").get<std::uint64_t>(), l.at("cpu").get<double>(),
               l.at("pids").get<std::uint64_t>(), l.at("workspace_bytes").get<std::uint64_t>()};
  s->network = sandboxing::parse_network_policy(r.at("network"), "network");
  s->egress_forwarder = r.value("egress_forwarder", sandboxing::egress_on(s->network));
  s->env = r.at("env").get<std::map<std::string, std::string>>();
  s->program_dirs = r.at("program_dirs").get<std::map<std::string, std::string>>();
  s->slot = r.at("slot").get<unsigned>();
  s->root_pid = r.at("root_pid").get<int>();
  s->touch();
  return s;
}

}  // namespace

bool is_env_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

void sandbox_entry::touch() {
  last_activity = std::chrono::steady_clock::now();
  last_activity_wall = std::chrono::system_clock::now();
}

std::optional<sandbox_settings> sandbox_settings::from_json(const json& body, std::string& error) {
  static const std::set<std::string> known = {"ttl_s",  "idle_timeout_s", "metadata",
                                              "limits", "network",        "env"};
  for (const auto& [k, v] : body.items())
    if (!known.count(k)) {
      error = "Unknown field \"" + k + "\"";
      return std::nullopt;
    }
  sandbox_settings s;
  if (!read_number(body, "ttl_s", s.ttl_s, error) ||
      !read_number(body, "idle_timeout_s", s.idle_timeout_s, error))
    return std::nullopt;
  if (!read_string_map(body, "metadata", s.metadata, max_metadata_entries, max_metadata_bytes, false, error))
    return std::nullopt;
  if (!read_string_map(body, "env", s.env, 256, 64 * 1024, true, error)) return std::nullopt;
  if (body.contains("limits") && !body["limits"].is_null()) {
    const auto& l = body["limits"];
    if (!l.is_object()) {
      error = "\"limits\" must be an object";
      return std::nullopt;
    }
    static const std::set<std::string> limit_keys = {"memory_bytes", "cpu", "pids", "workspace_bytes"};
    for (const auto& [k, v] : l.items())
      if (!limit_keys.count(k)) {
        error = "Unknown limit \"" + k + "\" (memory_bytes, cpu, pids, workspace_bytes)";
        return std::nullopt;
      }
    if (!read_number(l, "memory_bytes", s.memory_bytes, error) || !read_number(l, "cpu", s.cpu, error) ||
        !read_number(l, "pids", s.pids, error) ||
        !read_number(l, "workspace_bytes", s.workspace_bytes, error))
      return std::nullopt;
  }
  if (body.contains("network") && !body["network"].is_null()) {
    const auto& n = body["network"];
    if (!n.is_string() && !n.is_object()) {
      error = "\"network\" must be a mode (\"none\", \"loopback\", \"allow\", \"open\") or an object";
      return std::nullopt;
    }
    s.network = n;  // checked against the operator's ceiling at create
  }
  return s;
}

sandbox_manager::sandbox_manager(boost::asio::io_context& io, const config& cfg, kernelspec_catalog& specs,
                                 fs::path exe_dir, registry& reg)
    : io_(io),
      cfg_(cfg),
      specs_(specs),
      exe_dir_(std::move(exe_dir)),
      registry_(reg),
      slots_(cfg.node_id, cfg.host_id_lock_dir),
      sweep_timer_(io) {
  if (!slots_.unavailable().empty())
    log::warn("host_id_locks_unavailable",
              {{"why", slots_.unavailable()},
               {"effect", "host uid slots are claimed within this gateway only: run as root for sandboxes"}});
  if (slots_.node_shared())
    log::warn("node_shared_on_host",
              {{"node_id", std::to_string(cfg.node_id)},
               {"effect",
                "another gateway on this host runs as the same node: ids of both begin alike (give "
                "each its own --node-id); their sandboxes still get distinct host uids"}});
  policy_file_ =
      (cfg_.policy_file.empty() ? exe_dir_ / ".." / "share" / "sandgate" / "policies" / "default.json"
                                : cfg_.policy_file)
          .lexically_normal();
  std::ifstream in(policy_file_);
  default_policy_ = json::parse(in, nullptr, false);
  if (!default_policy_.is_object()) default_policy_ = json::object();  // the supervisor reports the error
  max_ttl_s_ = default_policy_.value("ttl_s", std::uint64_t{86400});
  load_network_defaults();
  sweep();
}

sandbox_manager::~sandbox_manager() {
  sweep_timer_.cancel();
  for (auto& [id, s] : sandboxes_)
    if (s->box) s->box->destroy();
}

void sandbox_manager::persist(const sandbox_entry& s) {
  registry_.put(registry::kind::sandbox, s.id, "", s.owner, to_record(s).dump());
}

std::vector<std::shared_ptr<sandbox_entry>> sandbox_manager::restore() {
  host_sandbox::remove_stale_aliases(cfg_.state_dir / "run");
  std::vector<std::shared_ptr<sandbox_entry>> restored;
  std::set<std::string> known;
  for (const auto& row : registry_.live(registry::kind::sandbox)) {
    known.insert(row.id);
    std::shared_ptr<sandbox_entry> s;
    try {
      s = from_record(row);
    } catch (const std::exception& e) {
      log::error("sandbox_record_unreadable", {{"sandbox_id", row.id}, {"error", e.what()}});
      registry_.end(registry::kind::sandbox, row.id, "lost");
      continue;
    }
    if (s->unsandboxed) {
      // Its processes were this gateway's children and ended with it (or
      // were orphaned by a crash, in their own sessions).
      log::warn("sandbox_lost",
                {{"sandbox_id", s->id}, {"why", "host processes do not outlive the gateway"}});
      registry_.end(registry::kind::sandbox, s->id, "lost");
      std::error_code ec;
      fs::remove_all(cfg_.state_dir / "run" / s->id, ec);
      fs::remove_all(cfg_.state_dir / "workspaces" / s->id, ec);
      fs::remove(cfg_.state_dir / "policies" / (s->id + ".json"), ec);
      continue;
    }
    supervisor_options opts;
    opts.program = exe_dir_ / "sandgate-sandbox";
    opts.policy_file = cfg_.state_dir / "policies" / (s->id + ".json");
    opts.id = s->id;
    opts.run_dir = cfg_.state_dir / "run" / s->id;
    opts.control_path = cfg_.state_dir / "control" / (s->id + ".sock");
    opts.log_path = cfg_.state_dir / "logs" / (s->id + ".log");
    opts.host_id_slot = s->slot;
    slots_.mark_used(s->slot);
    auto box = std::make_shared<supervised_sandbox>(io_, std::move(opts));
    s->box = box;
    sandboxes_.emplace(s->id, s);
    watch_end(s);
    box->attach(s->root_pid);
    when_ready(s, [this, s](const std::string& error) {
      if (!error.empty()) return;
      persist(*s);  // the supervisor's deadline may have moved
      start_egress(*s);
    });
    log::info("sandbox_reattaching", {{"sandbox_id", s->id}, {"owner", s->owner}});
    restored.push_back(s);
  }
  remove_orphans(known);
  return restored;
}

// The host id slot of the supervisor at the other end of a control socket,
// from its command line (the gateway that started it passed --host-id-slot).
std::optional<unsigned> sandbox_manager::slot_of_peer(int socket_fd) {
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(socket_fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || peer.pid <= 0)
    return std::nullopt;
  std::ifstream cmdline("/proc/" + std::to_string(peer.pid) + "/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string arg; std::getline(cmdline, arg, '\0');)
    args.push_back(arg);
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "--host-id-slot") continue;
    try {
      return static_cast<unsigned>(std::stoul(args[i + 1]));
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

void sandbox_manager::remove_orphans(const std::set<std::string>& known) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(cfg_.state_dir / "run", ec)) {
    const std::string id = entry.path().filename().string();
    if (known.count(id)) continue;
    const auto control = cfg_.state_dir / "control" / (id + ".sock");
    boost::asio::local::stream_protocol::socket probe(io_);
    boost::system::error_code connect_error;
    probe.connect(boost::asio::local::stream_protocol::endpoint(control.string()), connect_error);
    if (!connect_error) {
      // Its host id range stays its own: no new sandbox may share its uids.
      const auto slot = slot_of_peer(probe.native_handle());
      if (slot) slots_.mark_used(*slot);
      log::warn("sandbox_unknown_left_alone",
                {{"sandbox_id", id},
                 {"why", "its supervisor runs but the registry has no record of it"},
                 {"host_id_slot", slot ? std::to_string(*slot) : std::string("unknown")}});
      continue;
    }
    ::umount2(entry.path().c_str(), MNT_DETACH);  // the run dir's tmpfs, if any
    std::error_code rm;
    fs::remove_all(entry.path(), rm);
    fs::remove(control, rm);
    fs::remove(cfg_.state_dir / "policies" / (id + ".json"), rm);
    log::info("sandbox_orphan_removed", {{"sandbox_id", id}});
  }
}

void sandbox_manager::detach_all() {
  for (auto it = sandboxes_.begin(); it != sandboxes_.end();)
    if (it->second->box->detach())
      it = sandboxes_.erase(it);
    else
      ++it;
}

sandbox_limits sandbox_manager::default_limits() const {
  sandbox_limits l;
  if (!default_policy_.contains("limits") || !default_policy_["limits"].is_object()) return l;
  const auto& limits = default_policy_["limits"];
  l.memory_bytes = limits.value("memory_bytes", std::uint64_t{0});
  l.cpu = limits.value("cpu", 0.0);
  l.pids = limits.value("pids", std::uint64_t{0});
  l.workspace_bytes = limits.value("workspace_bytes", std::uint64_t{0});
  return l;
}

fs::path sandbox_manager::write_policy(const std::string& id, const sandbox_settings& settings,
                                       sandbox_entry& entry, domain_error& err) {
  json policy = default_policy_;
  auto& limits = policy["limits"];
  if (!limits.is_object()) limits = json::object();
  // A creator may lower the operator's limits, never raise them.
  auto lower = [&](const char* key, const auto& wanted, auto& resolved) -> bool {
    using T = std::decay_t<decltype(resolved)>;
    const bool has_max = limits.contains(key) && limits[key].is_number();
    const T max = has_max ? limits[key].get<T>() : T{};
    if (wanted && has_max && *wanted > max) {
      err = {fault::invalid, "limits." + std::string(key) + " " + json(*wanted).dump() +
                                 " is above this gateway's maximum of " + json(max).dump()};
      return false;
    }
    resolved = wanted ? *wanted : max;
    if (wanted) limits[key] = *wanted;
    return true;
  };
  if (!lower("memory_bytes", settings.memory_bytes, entry.limits.memory_bytes) ||
      !lower("cpu", settings.cpu, entry.limits.cpu) || !lower("pids", settings.pids, entry.limits.pids) ||
      !lower("workspace_bytes", settings.workspace_bytes, entry.limits.workspace_bytes))
    return {};
  const std::uint64_t ttl = settings.ttl_s.value_or(max_ttl_s_);
  if (ttl > max_ttl_s_) {
    err = {fault::invalid, "ttl_s " + std::to_string(ttl) + " is above this gateway's maximum of " +
                               std::to_string(max_ttl_s_)};
    return {};
  }
  policy["ttl_s"] = ttl;
  entry.expires_at = unix_now() + static_cast<std::int64_t>(ttl);
  entry.max_execution_s = policy.value("max_execution_s", std::uint64_t{0});
  entry.network = network_default_;
  if (settings.network) {
    auto wanted = network_from(*settings.network, err);
    if (!wanted) return {};
    entry.network = *wanted;
  }
  policy["network"] = sandboxing::to_json(entry.network);
  entry.egress_forwarder = sandboxing::egress_on(entry.network);
  if (!settings.env.empty()) {
    auto& set = policy["env"]["set"];
    if (!set.is_object()) set = json::object();
    for (const auto& [k, v] : settings.env)
      set[k] = v;
  }
  // Kernel programs outside the system dirs (this install's own kernels)
  // must be visible inside: bind their directories read-only under
  // /opt/sandgate (their host path may be one the sandbox builds, like /tmp).
  std::set<std::string> binds;
  for (const auto& [name, spec] : specs_.all())
    if (!spec.argv.empty() && fs::path(spec.argv[0]).is_absolute()) {
      const auto dir = fs::path(spec.argv[0]).parent_path();
      if (!visible_in_sandbox(dir)) binds.insert(dir.string());
    }
  auto& mounts = policy["mounts"];
  if (!mounts.is_array()) mounts = json::array();
  for (const auto& dir : binds)
    if (fs::is_directory(dir)) {
      const std::string inside = "/opt/sandgate/programs/" + std::to_string(entry.program_dirs.size());
      mounts.push_back({{"source", dir}, {"target", inside}, {"read_only", true}});
      entry.program_dirs[dir] = inside;
    }
  const auto path = cfg_.state_dir / "policies" / (id + ".json");
  fs::create_directories(path.parent_path());
  std::ofstream(path) << policy.dump(2);
  return path;
}

std::shared_ptr<sandbox_entry> sandbox_manager::create(const sandbox_settings& settings,
                                                       const std::string& owner, bool implicit,
                                                       bool unsandboxed, domain_error& err, bool pooled) {
  auto s = std::make_shared<sandbox_entry>();
  s->id = new_id(cfg_.node_id);
  s->owner = owner;
  s->implicit = implicit;
  s->pooled = pooled;
  s->created = std::chrono::system_clock::now();
  if (!pooled && !set_idle_timeout(*s, settings, err)) return nullptr;
  s->metadata = settings.metadata;
  s->env = settings.env;
  s->touch();
  specs_.refresh();
  const auto policy = write_policy(s->id, settings, *s, err);
  if (policy.empty()) return nullptr;
  std::optional<claimed_slot> claimed;  // its lock goes to the supervisor, then is closed here
  if (!unsandboxed) {
    claimed = slots_.claim();
    if (!claimed) {
      err = {fault::at_capacity,
             "This node runs its maximum of " + std::to_string(host_id_slots_per_node) + " sandboxes"};
      return nullptr;
    }
    s->slot = claimed->slot;
  }
  try {
    s->unsandboxed = unsandboxed;
    if (unsandboxed) {
      log::warn("sandbox_unsandboxed", {{"sandbox_id", s->id}});
      s->program_dirs.clear();  // on the host, programs are where they are
      s->box = std::make_shared<host_sandbox>(cfg_.state_dir / "run" / s->id,
                                              cfg_.state_dir / "workspaces" / s->id);
    } else {
      supervisor_options opts;
      opts.program = exe_dir_ / "sandgate-sandbox";
      opts.policy_file = policy;
      opts.id = s->id;
      opts.run_dir = cfg_.state_dir / "run" / s->id;
      opts.control_path = cfg_.state_dir / "control" / (s->id + ".sock");
      opts.log_path = cfg_.state_dir / "logs" / (s->id + ".log");
      fs::create_directories(opts.log_path.parent_path());
      opts.host_id_slot = s->slot;
      opts.host_id_lock_fd = claimed->lock.get();
      // Room for the connection files and sockets, and for four kernels' iopub journals.
      opts.run_dir_bytes = 16 * 1024 * 1024 + 4 * cfg_.iopub_journal_bytes;
      opts.ready_timeout = std::chrono::seconds(cfg_.kernel_start_timeout_s);
      auto box = std::make_shared<supervised_sandbox>(io_, std::move(opts));
      box->start();
      s->box = box;
    }
  } catch (const std::exception& e) {
    if (!unsandboxed) slots_.release(s->slot);
    err = {fault::internal, std::string("cannot create a sandbox: ") + e.what()};
    return nullptr;
  }
  watch_end(s);
  sandboxes_.emplace(s->id, s);
  persist(*s);
  if (!unsandboxed)
    when_ready(s, [this, s](const std::string& error) {
      if (error.empty() && sandboxes_.count(s->id)) {
        persist(*s);  // with the supervisor's pid
        start_egress(*s);
      }
    });
  ++gateway_metrics().sandboxes_created;
  log::info("sandbox_created",
            {{"sandbox_id", s->id}, {"owner", owner}, {"implicit", implicit ? "yes" : "no"}});
  return s;
}

bool sandbox_manager::set_idle_timeout(sandbox_entry& s, const sandbox_settings& settings,
                                       domain_error& err) const {
  // The operator's idle timeout binds every sandbox, implicit ones too; a
  // creator may ask for a shorter one.
  const auto timeout = settings.idle_timeout_s.value_or(cfg_.sandbox_idle_timeout_s);
  if (cfg_.sandbox_idle_timeout_s > 0 && timeout > cfg_.sandbox_idle_timeout_s) {
    err = {fault::invalid, "idle_timeout_s " + std::to_string(timeout) +
                               " is above this gateway's maximum of " +
                               std::to_string(cfg_.sandbox_idle_timeout_s)};
    return false;
  }
  s.idle_timeout_s = timeout;
  return true;
}

bool sandbox_manager::poolable(const sandbox_settings& settings) {
  return !settings.memory_bytes && !settings.cpu && !settings.pids && !settings.workspace_bytes &&
         !settings.network && settings.env.empty();
}

std::optional<domain_error> sandbox_manager::claim(sandbox_entry& s, const sandbox_settings& settings,
                                                   const std::string& owner, bool implicit) {
  domain_error err;
  if (settings.ttl_s && *settings.ttl_s > max_ttl_s_)
    return domain_error{fault::invalid, "ttl_s " + std::to_string(*settings.ttl_s) +
                                            " is above this gateway's maximum of " +
                                            std::to_string(max_ttl_s_)};
  if (!set_idle_timeout(s, settings, err)) return err;
  s.owner = owner;
  s.implicit = implicit;
  s.pooled = false;
  s.metadata = settings.metadata;
  s.created = std::chrono::system_clock::now();
  s.touch();
  persist(s);
  return std::nullopt;
}

void sandbox_manager::watch_end(const std::shared_ptr<sandbox_entry>& s) {
  std::weak_ptr<sandbox_entry> weak = s;
  s->box->on_end([this, weak](const std::string& why) {
    auto ended = weak.lock();
    if (!ended) return;
    const bool expired = unix_now() + 2 >= ended->expires_at;
    log::info("sandbox_ended", {{"sandbox_id", ended->id}, {"why", expired ? "ttl expired" : why}});
    end(ended->id, expired ? "expired" : "ended");
  });
}

void sandbox_manager::when_ready(const std::shared_ptr<sandbox_entry>& s,
                                 std::function<void(std::string error)> done) {
  s->box->when_ready([s, done = std::move(done)](const std::string& error) {
    if (error.empty())
      if (auto* sup = dynamic_cast<supervised_sandbox*>(s->box.get())) {
        if (sup->expires_at() > 0) s->expires_at = sup->expires_at();
        s->root_pid = sup->root_pid();
      }
    done(error);
  });
}

std::shared_ptr<sandbox_entry> sandbox_manager::find(const std::string& id) const {
  auto it = sandboxes_.find(id);
  return it == sandboxes_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<sandbox_entry>> sandbox_manager::list() const {
  std::vector<std::shared_ptr<sandbox_entry>> out;
  for (const auto& [id, s] : sandboxes_)
    if (!s->pooled) out.push_back(s);
  return out;
}

void sandbox_manager::remember_gone(const std::string& id, const std::string& reason) {
  if (gone_.count(id)) return;  // the first reason stands (a sandbox's end, before its kernels' losses)
  gone_[id] = {reason, std::chrono::steady_clock::now()};
  gone_order_.push_back(id);
  while (gone_order_.size() > max_gone_ids) {
    gone_.erase(gone_order_.front());
    gone_order_.pop_front();
  }
}

std::optional<std::string> sandbox_manager::gone(const std::string& id) const {
  auto it = gone_.find(id);
  if (it != gone_.end())
    return std::chrono::steady_clock::now() - it->second.second > gone_retention
               ? std::nullopt
               : std::optional<std::string>(it->second.first);
  try {  // ended under an earlier gateway
    return registry_.ended(
        id, unix_now() - std::chrono::duration_cast<std::chrono::seconds>(gone_retention).count());
  } catch (const std::exception& e) {
    log::error("registry_read_failed", {{"error", e.what()}});
    return std::nullopt;
  }
}

void sandbox_manager::end(const std::string& id, const std::string& reason) {
  auto s = find(id);
  if (!s) return;
  if (audit_) {
    const char* event = reason == "expired"  ? "sandbox.expire"
                        : reason == "culled" ? "sandbox.cull"
                                             : "sandbox.end";
    audit_->record(event, std::nullopt,
                   {{"sandbox_id", id},
                    {"owner", s->owner},
                    {"implicit", s->implicit},
                    {"kernel_ids", s->kernels},
                    {"reason", reason}});
  }
  if (end_listener_) end_listener_(s, reason);  // the kernels inside end first
  destroy(id, reason);
}

void sandbox_manager::destroy(const std::string& id, const std::string& reason) {
  auto it = sandboxes_.find(id);
  if (it == sandboxes_.end()) return;
  auto s = it->second;
  sandboxes_.erase(it);
  remember_gone(id, reason);
  registry_.end(registry::kind::sandbox, id, reason);
  for (const auto& k : s->kernels) {
    remember_gone(k, reason);
    registry_.end(registry::kind::kernel, k, reason);
  }
  stop_egress(id);
  s->box->destroy();
  std::error_code ec;
  fs::remove_all(cfg_.state_dir / "run" / id, ec);
  fs::remove(cfg_.state_dir / "control" / (id + ".sock"), ec);
  fs::remove(cfg_.state_dir / "policies" / (id + ".json"), ec);
  if (reason == "deleted" || reason == "culled") fs::remove(cfg_.state_dir / "logs" / (id + ".log"), ec);
  fs::remove_all(cfg_.state_dir / "workspaces" / id, ec);
  if (!s->unsandboxed) slots_.release(s->slot);
  ++gateway_metrics().sandboxes_ended[reason];
  log::info("sandbox_destroyed", {{"sandbox_id", id}, {"reason", reason}});
}

void sandbox_manager::extend(const std::shared_ptr<sandbox_entry>& s, std::uint64_t ttl_s,
                             std::function<void(std::optional<domain_error>)> done) {
  if (ttl_s > max_ttl_s_)
    return done(domain_error{fault::invalid, "ttl_s " + std::to_string(ttl_s) +
                                                 " is above this gateway's maximum of " +
                                                 std::to_string(max_ttl_s_)});
  const std::int64_t expires_at = unix_now() + static_cast<std::int64_t>(ttl_s);
  s->box->extend(expires_at, [this, s, expires_at, done = std::move(done)](const std::string& error) {
    if (!error.empty()) return done(domain_error{fault::conflict, "cannot extend the sandbox: " + error});
    s->expires_at = expires_at;
    if (sandboxes_.count(s->id)) persist(*s);
    done(std::nullopt);
  });
}

void sandbox_manager::sweep() {
  // Once a second: idle culling, and the gateway's own backstop for the TTL
  // (the supervisor enforces it; an unsandboxed "sandbox" has no supervisor).
  const auto now = std::chrono::steady_clock::now();
  const auto wall = unix_now();
  std::vector<std::pair<std::string, std::string>> ending;
  for (const auto& [id, s] : sandboxes_) {
    if (wall >= s->expires_at + 5) {
      ending.emplace_back(id, "expired");
    } else if (s->idle_timeout_s > 0 && s->commands_running == 0 &&
               now - s->last_activity > std::chrono::seconds(s->idle_timeout_s) &&
               (!idle_probe_ || idle_probe_(*s))) {
      ending.emplace_back(id, "culled");
    }
  }
  for (const auto& [id, reason] : ending) {
    log::info("sandbox_" + reason, {{"sandbox_id", id}});
    end(id, reason);
  }
  sweep_timer_.expires_after(std::chrono::seconds(1));
  sweep_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) sweep();
  });
}

}  // namespace sandgate::gateway
