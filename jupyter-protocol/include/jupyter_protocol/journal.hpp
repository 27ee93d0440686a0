#pragma once
// The iopub journal: what a kernel published, kept where the gateway can read
// it after a restart, so output sent while no gateway listened is not lost.
//
// A kernel (sandgate-python, sandgate-shell) told so by its environment
// appends every message its iopub socket sends, as its ZeroMQ frames, to one
// of two files `<base>.0` and `<base>.1`. When the
// file being written would pass half the budget, the other one is emptied
// and written next: the pair holds at least the last half-budget of
// messages. Each record:
//
//   u32 magic "SGJ1" | u32 frame count | u64 sequence number (from 1)
//   then per frame: u32 length | bytes          (integers little-endian)
//
// The reader trusts nothing: a record cut short (the kernel died while
// writing), a wrong magic or a frame count or length past the limits ends
// that file's records. Frames are verified (HMAC) by whoever decodes them.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::protocol {

struct journal_record {
  std::uint64_t seq = 0;
  std::vector<std::string> frames;
};

inline constexpr std::uint32_t journal_magic = 0x314a4753;  // "SGJ1" as read little-endian
inline constexpr std::uint32_t journal_max_frames = 4096;
// The environment a kernel reads: the base path (as the kernel sees it) and
// the budget in bytes for both files together.
inline constexpr const char* journal_path_env = "SANDGATE_KERNEL_JOURNAL";
inline constexpr const char* journal_bytes_env = "SANDGATE_KERNEL_JOURNAL_BYTES";

// Appends one record to `out`.
void append_journal_record(std::string& out, std::uint64_t seq, const std::vector<std::string_view>& frames);

// One record built frame by frame, as a kernel's socket sends them: each
// frame is copied once, into the record.
class journal_record_builder {
 public:
  // Adds a frame; the first after finish() starts the next record.
  void add_frame(std::string_view frame);
  // The record of the frames added since the last finish, numbered `seq`;
  // valid until the next add_frame. Empty when no frame was added.
  [[nodiscard]] std::string_view finish(std::uint64_t seq);

 private:
  std::string record_;
  std::uint32_t frames_ = 0;
  bool open_ = false;
};

// Every whole record at the start of `data`, in file order.
[[nodiscard]] std::vector<journal_record> parse_journal(std::string_view data);

// The records of both files in sequence order, without repeats.
[[nodiscard]] std::vector<journal_record> merge_journals(std::vector<journal_record> a,
                                                         std::vector<journal_record> b);

}  // namespace sandgate::protocol
