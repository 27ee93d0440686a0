#include <jupyter_protocol/journal.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sandgate::protocol {
namespace {

std::vector<std::string> frames_of(const journal_record& r) {
  return r.frames;
}

TEST(journal, records_read_back_as_written) {
  std::string data;
  append_journal_record(data, 1, {"topic", "<IDS|MSG>", "sig", "{}", std::string("\0\xff", 2)});
  append_journal_record(data, 2, {"only"});
  const auto records = parse_journal(data);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].seq, 1u);
  EXPECT_EQ(frames_of(records[0]),
            (std::vector<std::string>{"topic", "<IDS|MSG>", "sig", "{}", std::string("\0\xff", 2)}));
  EXPECT_EQ(records[1].seq, 2u);
  EXPECT_EQ(frames_of(records[1]), std::vector<std::string>{"only"});
}

TEST(journal, a_record_built_frame_by_frame_is_the_record_written_at_once) {
  const std::vector<std::string_view> frames{"topic", "<IDS|MSG>", "sig", "{}",
                                             std::string_view("\0\xff", 2)};
  std::string whole;
  append_journal_record(whole, 7, frames);
  journal_record_builder builder;
  EXPECT_TRUE(builder.finish(1).empty());  // nothing added
  for (const auto f : frames)
    builder.add_frame(f);
  EXPECT_EQ(builder.finish(7), whole);
  // The next frame starts the next record.
  builder.add_frame("next");
  std::string next;
  append_journal_record(next, 8, {"next"});
  EXPECT_EQ(builder.finish(8), next);
  EXPECT_TRUE(builder.finish(9).empty());
}

TEST(journal, a_record_cut_short_ends_the_file_without_error) {
  std::string data;
  append_journal_record(data, 1, {"first"});
  const auto whole = data.size();
  append_journal_record(data, 2, {"second, cut"});
  for (std::size_t cut = whole; cut < data.size(); ++cut) {
    const auto records = parse_journal(std::string_view(data).substr(0, cut));
    ASSERT_EQ(records.size(), 1u) << cut;
    EXPECT_EQ(records[0].frames, std::vector<std::string>{"first"});
  }
}

TEST(journal, garbage_and_absurd_counts_are_not_records) {
  EXPECT_TRUE(parse_journal("").empty());
  EXPECT_TRUE(parse_journal(std::string(64, 'x')).empty());
  std::string data;
  append_journal_record(data, 1, {"a"});
  data[4] = '\xff';  // frame count 0x...ff: past the limit or past the data
  data[5] = '\xff';
  EXPECT_TRUE(parse_journal(data).empty());
  std::string huge_frame;
  append_journal_record(huge_frame, 1, {"abc"});
  huge_frame[16] = '\x7f';  // first frame's length far past the end
  EXPECT_TRUE(parse_journal(huge_frame).empty());
}

TEST(journal, two_files_merge_in_sequence_order_without_repeats) {
  std::string older;
  std::string newer;
  append_journal_record(newer, 5, {"e"});
  append_journal_record(newer, 6, {"f"});
  append_journal_record(older, 3, {"c"});
  append_journal_record(older, 4, {"d"});
  append_journal_record(older, 5, {"e"});
  const auto merged = merge_journals(parse_journal(newer), parse_journal(older));
  std::vector<std::uint64_t> seqs;
  for (const auto& r : merged)
    seqs.push_back(r.seq);
  EXPECT_EQ(seqs, (std::vector<std::uint64_t>{3, 4, 5, 6}));
}

}  // namespace
}  // namespace sandgate::protocol
