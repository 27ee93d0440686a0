// Restarts: a gateway takes back the sandboxes an earlier one left running
// (their registry records), removes what is left of sandboxes that nothing
// explains (orphans), and on its own way out leaves its sandboxes running
// for the next one.
#include "sandbox_manager.hpp"

#include "host_sandbox.hpp"
#include "sandbox_paths.hpp"
#include "supervised_sandbox.hpp"

#include <gateway/log.hpp>

#include <boost/asio/local/stream_protocol.hpp>

#include <sys/mount.h>
#include <sys/socket.h>

#include <fstream>

namespace sandgate::gateway {
namespace fs = std::filesystem;

namespace {

// The host id slot of the supervisor at the other end of a control socket,
// from its command line (the gateway that started it passed --host-id-slot).
std::optional<unsigned> slot_of_peer(int socket_fd) {
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

}  // namespace

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
    const sandbox_paths paths(cfg_.state_dir, s->id);
    if (s->unsandboxed) {
      // Its processes were this gateway's children and ended with it (or
      // were orphaned by a crash, in their own sessions).
      log::warn("sandbox_lost",
                {{"sandbox_id", s->id}, {"why", "host processes do not outlive the gateway"}});
      registry_.end(registry::kind::sandbox, s->id, "lost");
      paths.remove(false);
      continue;
    }
    slots_.mark_used(s->slot);
    auto box =
        std::make_shared<supervised_sandbox>(io_, supervisor_options_for(exe_dir_, paths, s->id, s->slot));
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

void sandbox_manager::remove_orphans(const std::set<std::string>& known) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(cfg_.state_dir / "run", ec)) {
    const std::string id = entry.path().filename().string();
    if (known.count(id)) continue;
    const sandbox_paths paths(cfg_.state_dir, id);
    boost::asio::local::stream_protocol::socket probe(io_);
    boost::system::error_code connect_error;
    probe.connect(boost::asio::local::stream_protocol::endpoint(paths.control.string()), connect_error);
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
    fs::remove(paths.control, rm);
    fs::remove(paths.policy, rm);
    log::info("sandbox_orphan_removed", {{"sandbox_id", id}});
  }
}

void sandbox_manager::leave_all_running() {
  for (auto it = sandboxes_.begin(); it != sandboxes_.end();)
    if (it->second->box->leave_running())
      it = sandboxes_.erase(it);
    else
      ++it;
}

}  // namespace sandgate::gateway
