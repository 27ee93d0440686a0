// Dropping privileges for a program about to be executed in the sandbox:
// identity, capabilities (bounding, ambient, effective, permitted,
// inheritable), securebits, no_new_privs and resource limits.
#pragma once

#include <cstdint>

#include "sandboxing/policy.hpp"

namespace sandgate::sandboxing {

// Sets RLIMIT_NOFILE, FSIZE, NPROC (pids) and CORE (0), soft and hard; throws sys_error.
void apply_rlimits(const limits& l);

// Becomes uid/gid (supplementary groups cleared when allowed) and drops every
// capability for good; throws sys_error.
void drop_privileges(std::uint32_t uid, std::uint32_t gid, bool may_setgroups);

// prctl(PR_SET_NO_NEW_PRIVS); throws sys_error.
void set_no_new_privs();

// True when the calling process holds no capability in any set.
bool holds_no_capabilities();

}  // namespace sandgate::sandboxing
