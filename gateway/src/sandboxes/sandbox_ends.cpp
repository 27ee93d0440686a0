// How sandboxes end by themselves: their supervisor ends (at the TTL, or a
// crash), the TTL passes (the gateway's backstop; an unsandboxed "sandbox"
// has no supervisor), or they sit idle past their idle timeout (culled).
// Each such end is audited, and the kernels inside end first.
#include "sandbox_manager.hpp"

#include <gateway/log.hpp>

namespace sandgate::gateway {

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
