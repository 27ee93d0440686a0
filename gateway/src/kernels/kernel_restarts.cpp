// Across the gateway's own restarts: taking back the kernels an earlier
// gateway on this state dir left running, and leaving them running for the
// next one.

#include "kernel_manager.hpp"

#include "../util/json_input.hpp"

#include <gateway/log.hpp>

#include <nlohmann/json.hpp>

namespace sandgate::gateway {

void kernel_manager::restore() {
  std::map<std::string, std::shared_ptr<sandbox_entry>> boxes;
  for (auto& s : sandboxes_.restore())
    boxes.emplace(s->id, s);
  // A warm pool's members are not taken back: the new gateway fills its own.
  for (auto it = boxes.begin(); it != boxes.end();)
    if (it->second->pooled) {
      sandboxes_.destroy(it->first, "retired");
      it = boxes.erase(it);
    } else {
      ++it;
    }
  for (const auto& row : registry_.live(registry::kind::kernel)) {
    auto it = boxes.find(row.parent);
    nlohmann::json record = parse_json(row.record);
    if (it == boxes.end() || !sandboxes_.find(row.parent) || !record.is_object() ||
        !record.value("key", nlohmann::json()).is_string()) {
      // Its sandbox ended while no gateway ran (the kernel shares its
      // reason), or could not be taken back.
      const std::string reason = sandboxes_.gone(row.parent).value_or("lost");
      log::warn("kernel_lost", {{"kernel_id", row.id}, {"why", "its sandbox is gone (" + reason + ")"}});
      end_running_executions(row.id, reason);
      forget(row.id, reason);
      continue;
    }
    const auto& box = it->second;
    const std::string name = record.value("name", "");
    kernelspec spec;
    if (const kernelspec* found = specs_.find(name))
      spec = *found;
    else
      spec.name = spec.display_name = name;  // gone from disk; the running kernel still answers
    kernel_options opts = options_for(row.id, row.owner, spec, *box);
    opts.key = record["key"].get<std::string>();
    // Kernels started before names were stored used the id's last 12 hex digits.
    const auto file = record.value("file", nlohmann::json());
    opts.file_name = file.is_string() ? file.get<std::string>() : "k" + row.id.substr(row.id.size() - 12);
    auto k = kernel::create(io_, zmq_, std::move(opts), box->box, output_);
    enlist(k, *box);
    try {
      k->take_up_executions(registry_.running_executions(row.id),
                            [this, id = row.id](const std::string& msg_id) {
                              try {
                                return registry_.execution(id, msg_id).has_value();
                              } catch (const std::exception&) {
                                return true;  // unreadable: take nothing up twice
                              }
                            });
    } catch (const std::exception& e) {
      log::error("registry_read_failed", {{"error", e.what()}});
    }
    log::info("kernel_reattaching", {{"kernel_id", k->id()}, {"sandbox_id", box->id}});
    k->reattach([this, k](const std::string& error) {
      if (error.empty()) return;
      log::warn("kernel_lost", {{"kernel_id", k->id()}, {"why", error}});
      release(k, "lost");
    });
  }
  // A sandbox made for one kernel that did not come back has no use.
  for (const auto& [id, box] : boxes)
    if (box->implicit && box->kernels.empty()) sandboxes_.destroy(id, "lost");
}

// A pool's members and the kernels claimed sandboxes brought along are the
// gateway's own, never left running without it.
void kernel_manager::end_unclaimed() {
  pool_.stop();
  for (auto& [id, k] : std::exchange(pool_starting_, {})) {
    const auto sandbox_id = k->sandbox_id();
    k->terminate("the gateway stops");
    sandboxes_.destroy(sandbox_id, "retired");
  }
  for (auto& [id, k] : std::exchange(reserved_, {}))
    k->terminate("the gateway stops");
}

void kernel_manager::leave_all_running(const std::function<void()>& done) {
  end_unclaimed();
  std::vector<std::shared_ptr<kernel>> host;
  for (const auto& k : list()) {
    auto box = sandboxes_.find(k->sandbox_id());
    if (box && box->unsandboxed) {
      host.push_back(k);
    } else {
      k->leave_running();
      kernels_.erase(k->id());
    }
  }
  sandboxes_.leave_all_running();
  auto remaining = std::make_shared<std::size_t>(host.size());
  if (host.empty()) return done();
  for (const auto& k : host)
    shutdown_kernel(k->id(), [remaining, done] {
      if (--*remaining == 0) done();
    });
}

}  // namespace sandgate::gateway
