#include "sandboxing/id_map.hpp"

#include <unistd.h>

#include "sandboxing/sys_error.hpp"

namespace sandgate::sandboxing {

std::uint32_t host_id_slot(std::string_view sandbox_id, std::uint32_t slots) {
  std::uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : sandbox_id) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return slots == 0 ? 0 : static_cast<std::uint32_t>(hash % slots);
}

id_plan plan_ids(std::uint32_t inside_uid, std::uint32_t inside_gid, std::uint32_t host_base,
                 std::uint32_t slot) {
  id_plan plan;
  plan.inside_uid = inside_uid;
  plan.inside_gid = inside_gid;
  plan.privileged = ::geteuid() == 0;
  if (plan.privileged) {
    plan.supervisor_host_uid = plan.supervisor_host_gid = host_base + 2 * slot;
    plan.host_uid = plan.host_gid = host_base + 2 * slot + 1;
  } else {
    plan.host_uid = plan.supervisor_host_uid = ::geteuid();
    plan.host_gid = plan.supervisor_host_gid = ::getegid();
  }
  return plan;
}

std::string uid_map_text(const id_plan& plan) {
  std::string text;
  if (plan.privileged) text += "0 " + std::to_string(plan.supervisor_host_uid) + " 1\n";
  text += std::to_string(plan.inside_uid) + " " + std::to_string(plan.host_uid) + " 1\n";
  return text;
}

std::string gid_map_text(const id_plan& plan) {
  std::string text;
  if (plan.privileged) text += "0 " + std::to_string(plan.supervisor_host_gid) + " 1\n";
  text += std::to_string(plan.inside_gid) + " " + std::to_string(plan.host_gid) + " 1\n";
  return text;
}

void write_id_maps(pid_t pid, const id_plan& plan) {
  const std::string proc = "/proc/" + std::to_string(pid);
  if (!plan.privileged) write_file(proc + "/setgroups", "deny");
  write_file(proc + "/uid_map", uid_map_text(plan));
  write_file(proc + "/gid_map", gid_map_text(plan));
}

}  // namespace sandgate::sandboxing
