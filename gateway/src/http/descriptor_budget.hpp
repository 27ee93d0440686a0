#pragma once
// How the process's open-file limit is shared: descriptors kept for the
// gateway's own work (each kernel's ZeroMQ sockets and their mailboxes, its
// pinned socket files, its sandbox's control socket and process descriptor;
// the registry, the audit log, the egress proxy, files being served) and
// what is left for client connections, so that no flood of clients ever
// takes what a kernel start or a sandbox needs.

#include <cstddef>
#include <cstdint>

namespace sandgate::gateway {

// About 14 per kernel, rounded up.
inline constexpr std::size_t descriptors_per_kernel = 16;
// The gateway's own files, listeners, the egress proxy, files being served.
inline constexpr std::size_t descriptors_for_the_gateway = 256;

struct descriptor_budget {
  std::uint64_t open_file_limit = 0;  // the soft RLIMIT_NOFILE
  std::size_t reserved = 0;           // kept for kernels and the gateway's own files
  std::size_t for_clients = 0;        // client connections that fit beside them
  // The limit holds the reserve; when it does not, clients get a quarter of
  // it and kernel starts may fail for want of descriptors.
  [[nodiscard]] bool holds_reserve() const noexcept { return open_file_limit >= reserved; }
  // Kernels whose descriptors the limit could hold, were there no clients.
  [[nodiscard]] std::uint64_t kernels_that_fit() const noexcept {
    return (open_file_limit > descriptors_for_the_gateway ? open_file_limit - descriptors_for_the_gateway
                                                          : 0) /
           descriptors_per_kernel;
  }
};

// `most_kernels`: --max-kernels and the warm pools at their deepest.
[[nodiscard]] descriptor_budget share_descriptors(std::uint64_t open_file_limit, std::size_t most_kernels);

// The most client connections at once: the configured number, no more than
// the budget leaves, and at least one.
[[nodiscard]] std::size_t connection_cap(std::size_t configured, const descriptor_budget& budget);

}  // namespace sandgate::gateway
