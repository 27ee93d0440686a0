#include <jupyter_protocol/journal.hpp>

#include <algorithm>
#include <cstring>
#include <iterator>

namespace sandgate::protocol {
namespace {

template <class T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  for (std::size_t i = 0; i < sizeof(T); ++i)
    bytes[i] = static_cast<char>((value >> (8 * i)) & 0xff);
  out.append(bytes, sizeof(T));
}

template <class T>
bool take(std::string_view& data, T& value) {
  if (data.size() < sizeof(T)) return false;
  value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i)
    value |= static_cast<T>(static_cast<unsigned char>(data[i])) << (8 * i);
  data.remove_prefix(sizeof(T));
  return true;
}

void put_at(std::string& out, std::size_t offset, std::uint64_t value, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i)
    out[offset + i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

constexpr std::size_t header_bytes = 16;  // magic, frame count, sequence number

}  // namespace

void journal_record_builder::add_frame(std::string_view frame) {
  if (!open_) {
    record_.clear();
    record_.append(header_bytes, '\0');
    frames_ = 0;
    open_ = true;
  }
  put<std::uint32_t>(record_, static_cast<std::uint32_t>(frame.size()));
  record_.append(frame);
  ++frames_;
}

std::string_view journal_record_builder::finish(std::uint64_t seq) {
  if (!open_) return {};
  open_ = false;
  put_at(record_, 0, journal_magic, 4);
  put_at(record_, 4, frames_, 4);
  put_at(record_, 8, seq, 8);
  return record_;
}

void append_journal_record(std::string& out, std::uint64_t seq, const std::vector<std::string_view>& frames) {
  put<std::uint32_t>(out, journal_magic);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(frames.size()));
  put<std::uint64_t>(out, seq);
  for (const auto f : frames) {
    put<std::uint32_t>(out, static_cast<std::uint32_t>(f.size()));
    out.append(f);
  }
}

std::vector<journal_record> parse_journal(std::string_view data) {
  std::vector<journal_record> records;
  for (;;) {
    std::uint32_t magic = 0;
    std::uint32_t count = 0;
    journal_record r;
    if (!take(data, magic) || magic != journal_magic || !take(data, count) || count == 0 ||
        count > journal_max_frames || !take(data, r.seq))
      return records;
    r.frames.reserve(count);
    for (std::uint32_t i = 0; i < count; ++i) {
      std::uint32_t length = 0;
      if (!take(data, length) || length > data.size()) return records;
      r.frames.emplace_back(data.substr(0, length));
      data.remove_prefix(length);
    }
    records.push_back(std::move(r));
  }
}

std::vector<journal_record> merge_journals(std::vector<journal_record> a, std::vector<journal_record> b) {
  std::vector<journal_record> all;
  all.reserve(a.size() + b.size());
  std::move(a.begin(), a.end(), std::back_inserter(all));
  std::move(b.begin(), b.end(), std::back_inserter(all));
  std::stable_sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.seq < y.seq; });
  all.erase(std::unique(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.seq == y.seq; }),
            all.end());
  return all;
}

}  // namespace sandgate::protocol
