// Keeping the long-lived processes (the outer waiter and the supervisor)
// small: after setup they run a few pages of code, but every page of the
// program they touched while setting up stays mapped and counts in VmRSS.
#pragma once

namespace sandgate::sandboxing::detail {

// For a moment of quiet: drops this process's mappings of the pages of its
// own program file that it never modified (code, read-only data) with
// madvise(MADV_DONTNEED) -- they stay in the page cache, shared, and the
// pages still needed fault back in; mappings holding a private modified page
// (relocated data) are left alone -- and gives free heap pages back
// (malloc_trim). Costs about a millisecond of CPU. Best effort.
void release_idle_memory() noexcept;

// Fixes malloc's mmap threshold (blocks of 64 KiB and more come from mmap
// and go back to the system when freed) and trims the heap's top at 128 KiB.
void keep_heap_small() noexcept;

}  // namespace sandgate::sandboxing::detail
