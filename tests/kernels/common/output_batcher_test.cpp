#include "sandgate_kernels/output_batcher.hpp"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sandgate::kernels {
namespace {

using chunks = std::vector<std::pair<output_stream, std::string>>;

output_handler recorder(chunks& out) {
  return
      [&out](output_stream stream, std::string_view bytes) { out.emplace_back(stream, std::string(bytes)); };
}

TEST(output_batcher, groups_small_writes_until_flushed) {
  chunks out;
  const auto handler = recorder(out);
  output_batcher batcher(handler);
  EXPECT_EQ(batcher.poll_timeout_ms(), -1);
  batcher.add(output_stream::stdout_stream, "a\n");
  batcher.add(output_stream::stdout_stream, "b\n");
  EXPECT_TRUE(out.empty());
  EXPECT_GE(batcher.poll_timeout_ms(), 0);
  batcher.flush_all();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].second, "a\nb\n");
}

TEST(output_batcher, keeps_stream_order) {
  chunks out;
  const auto handler = recorder(out);
  output_batcher batcher(handler);
  batcher.add(output_stream::stdout_stream, "1");
  batcher.add(output_stream::stderr_stream, "2");
  batcher.add(output_stream::stdout_stream, "3");
  batcher.flush_all();
  const chunks expected{{output_stream::stdout_stream, "1"},
                        {output_stream::stderr_stream, "2"},
                        {output_stream::stdout_stream, "3"}};
  EXPECT_EQ(out, expected);
}

TEST(output_batcher, flushes_full_chunks_at_once) {
  chunks out;
  const auto handler = recorder(out);
  output_batcher batcher(handler);
  batcher.add(output_stream::stdout_stream, std::string(output_batcher::max_chunk_bytes, 'x'));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].second.size(), output_batcher::max_chunk_bytes);
}

TEST(output_batcher, flush_due_waits_for_the_interval) {
  chunks out;
  const auto handler = recorder(out);
  output_batcher batcher(handler);
  batcher.add(output_stream::stderr_stream, "late");
  std::this_thread::sleep_for(output_batcher::flush_interval + std::chrono::milliseconds(5));
  batcher.flush_due();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first, output_stream::stderr_stream);
}

}  // namespace
}  // namespace sandgate::kernels
