#pragma once
// The process API (docs/api.md "Processes") between clients and the
// supervisor: a start request becomes the supervisor's spawn with streams, a
// supervisor's record becomes the model clients read, and signals are named
// as people name them. No I/O.

#include "../util/domain_error.hpp"
#include "sandbox_entry.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace sandgate::gateway {

inline constexpr std::uint64_t default_process_buffer_bytes = 1u << 20;  // per output stream

struct process_start {
  std::string id;     // the process's id, new
  nlohmann::json op;  // the supervisor's spawn (without "req")
  std::string cmd;    // the command string, or "" for an argv
};

// A POST /api/sandboxes/{id}/processes body ({"cmd" string or argv array,
// "cwd", "env", "stdin", "pty": {"cols", "rows"}, "timeout_s", "buffer_bytes"})
// for sandbox `s`; nothing, with `err` naming the field, when it is not one.
[[nodiscard]] std::optional<process_start> parse_process_start(const nlohmann::json& body,
                                                               const sandbox_entry& s, domain_error& err);

// A signal by name ("INT", "SIGTERM", "kill", ...) or number (1-64); nothing
// for anything else.
[[nodiscard]] std::optional<int> signal_number(const nlohmann::json& value);

// Columns or rows of a terminal: 1 to 10000.
[[nodiscard]] bool valid_terminal_size(const nlohmann::json& value);

// The model clients read, from the supervisor's record of a process.
[[nodiscard]] nlohmann::json process_model(const nlohmann::json& record);

// A process id as the API makes them ("p" and 16 hex digits); what a path may name.
[[nodiscard]] bool valid_process_id(const std::string& id);

}  // namespace sandgate::gateway
