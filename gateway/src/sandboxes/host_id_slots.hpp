#pragma once
// Host id slots (two host uids each) for this node's sandboxes, claimed
// host-wide. Node N uses slots [N * host_id_slots_per_node, (N + 1) *
// host_id_slots_per_node), so nodes with distinct numbers never meet; and
// since gateways on one host may share a node number (or a state dir's
// sandboxes outlive the gateway that started them), each slot in use is an
// exclusive flock on `<lock_dir>/<slot>.lock`: taken by claim(), handed to
// the sandbox supervisor, which holds it for its whole life, and so
// released by the kernel when the last process of that sandbox ends. A slot
// another gateway's sandbox holds is skipped.

#include <sandboxing/unique_fd.hpp>

#include <filesystem>
#include <optional>
#include <set>
#include <string>

namespace sandgate::gateway {

inline constexpr unsigned host_id_slots_per_node = 4096;

struct claimed_slot {
  unsigned slot = 0;
  sandboxing::unique_fd lock;  // for the supervisor to inherit (empty without locks); closed once it has
};

class host_id_slots {
 public:
  // Creates `lock_dir` (mode 0700) when missing. When it cannot (a gateway
  // not run as root, which has no sandboxes), slots are claimed within this
  // gateway only and unavailable() says why.
  host_id_slots(unsigned node_id, std::filesystem::path lock_dir);

  // The lowest slot of this node's range that neither this gateway nor any
  // other process on the host holds; nothing when all are taken.
  [[nodiscard]] std::optional<claimed_slot> claim();
  // A slot a sandbox already holds (one taken back after a restart).
  void mark_used(unsigned slot) { used_.insert(slot); }
  void release(unsigned slot) { used_.erase(slot); }

  // Whether another live gateway on this host runs as the same node
  // number (its ids then begin like this one's); checked at construction.
  [[nodiscard]] bool node_shared() const noexcept { return node_shared_; }
  [[nodiscard]] const std::string& unavailable() const noexcept { return unavailable_; }

 private:
  unsigned first_;
  std::filesystem::path lock_dir_;
  std::set<unsigned> used_;
  sandboxing::unique_fd node_lock_;  // held while this gateway runs
  bool node_shared_ = false;
  std::string unavailable_;
};

}  // namespace sandgate::gateway
