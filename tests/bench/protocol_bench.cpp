// Protocol codec micro-benchmark: what the gateway does per relayed message.
//   decode_verify:         decode + HMAC verify + header parse
//   decode_verify_encode:  decode + verify + re-sign/encode (the relay path)
//   encode_legacy / encode_v1: ZeroMQ message -> WebSocket frame
// Arguments: content size in bytes (100 and 1 MiB).

#include <jupyter_protocol/websocket.hpp>
#include <jupyter_protocol/wire.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace sp = sandgate::protocol;

namespace {

// An iopub stream message whose content is `content_bytes` long.
sp::message sample_message(std::size_t content_bytes) {
  const std::string prefix = "{\"name\": \"stdout\", \"text\": \"";
  const std::string suffix = "\"}";
  const std::size_t text_bytes =
      content_bytes > prefix.size() + suffix.size() ? content_bytes - prefix.size() - suffix.size() : 0;
  auto request = sp::make_message("execute_request", "{\"code\": \"print(1)\"}", "client-session");
  auto m = sp::make_reply(request, "stream", prefix + std::string(text_bytes, 'x') + suffix);
  m.identities.clear();
  return m;
}

std::size_t total_bytes(const std::vector<std::string>& frames) {
  std::size_t n = 0;
  for (const auto& f : frames)
    n += f.size();
  return n;
}

const sp::signer& bench_signer() {
  static const sp::signer s{"0123456789abcdef0123456789abcdef"};
  return s;
}

void decode_verify(benchmark::State& state) {
  const auto& s = bench_signer();
  const auto frames = sp::encode(sample_message(static_cast<std::size_t>(state.range(0))), s);
  const std::size_t bytes = total_bytes(frames);
  // decode consumes its frames: decode from a pool of copies, refilled with
  // the timer paused (at most 16 MiB or 256 messages per refill).
  const std::size_t pool_size = std::clamp<std::size_t>((16u << 20) / bytes, 1, 256);
  std::vector<std::vector<std::string>> pool(pool_size);
  std::size_t next = pool_size;
  sp::message m;
  for (auto _ : state) {
    if (next == pool_size) {
      state.PauseTiming();
      for (auto& p : pool)
        p = frames;
      next = 0;
      state.ResumeTiming();
    }
    if (sp::decode(std::move(pool[next++]), s, m)) std::abort();
    benchmark::DoNotOptimize(m.head.msg_id.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

void decode_verify_encode(benchmark::State& state) {
  const auto& s = bench_signer();
  auto frames = sp::encode(sample_message(static_cast<std::size_t>(state.range(0))), s);
  const std::size_t bytes = total_bytes(frames);
  sp::message m;
  for (auto _ : state) {
    if (sp::decode(std::move(frames), s, m)) std::abort();
    frames = sp::encode(std::move(m), s);
    benchmark::DoNotOptimize(frames.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

void encode_legacy(benchmark::State& state) {
  const auto m = sample_message(static_cast<std::size_t>(state.range(0)));
  std::size_t bytes = 0;
  for (auto _ : state) {
    auto frame = sp::encode_legacy(sp::channel::iopub, m);
    bytes = frame.data.size();
    benchmark::DoNotOptimize(frame.data.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

void encode_v1(benchmark::State& state) {
  const auto m = sample_message(static_cast<std::size_t>(state.range(0)));
  std::size_t bytes = 0;
  for (auto _ : state) {
    auto frame = sp::encode_v1(sp::channel::iopub, m);
    bytes = frame.size();
    benchmark::DoNotOptimize(frame.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

void decode_legacy(benchmark::State& state) {
  const auto m = sample_message(static_cast<std::size_t>(state.range(0)));
  const auto frame = sp::encode_legacy(sp::channel::shell, m);
  sp::message out;
  sp::channel c{};
  for (auto _ : state) {
    if (sp::decode_legacy(frame.data, frame.binary, c, out)) std::abort();
    benchmark::DoNotOptimize(out.content.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * frame.data.size()));
}

void decode_v1(benchmark::State& state) {
  const auto m = sample_message(static_cast<std::size_t>(state.range(0)));
  const auto frame = sp::encode_v1(sp::channel::shell, m);
  sp::message out;
  sp::channel c{};
  for (auto _ : state) {
    if (sp::decode_v1(frame, c, out)) std::abort();
    benchmark::DoNotOptimize(out.content.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * frame.size()));
}

// The two parts of decode_verify on their own.
void hmac_sign(benchmark::State& state) {
  const auto m = sample_message(static_cast<std::size_t>(state.range(0)));
  const auto& s = bench_signer();
  for (auto _ : state) {
    auto digest = s.sign(m.header, m.parent_header, m.metadata, m.content);
    benchmark::DoNotOptimize(digest.data());
  }
  state.SetBytesProcessed(
      static_cast<std::int64_t>(state.iterations() * (m.header.size() + m.parent_header.size() +
                                                      m.metadata.size() + m.content.size())));
}

void parse_header_and_parent(benchmark::State& state) {
  const auto m = sample_message(100);
  sp::header_fields head;
  sp::header_fields parent;
  for (auto _ : state) {
    if (sp::parse_header(m.header, head, true) || sp::parse_header(m.parent_header, parent, false))
      std::abort();
    benchmark::DoNotOptimize(head.msg_id.data());
  }
}

constexpr std::int64_t small_bytes = 100;
constexpr std::int64_t large_bytes = 1 << 20;

}  // namespace

BENCHMARK(hmac_sign)->Arg(small_bytes)->Arg(large_bytes);
BENCHMARK(parse_header_and_parent);
BENCHMARK(decode_verify)->Arg(small_bytes)->Arg(large_bytes);
BENCHMARK(decode_verify_encode)->Arg(small_bytes)->Arg(large_bytes);
BENCHMARK(encode_legacy)->Arg(small_bytes)->Arg(large_bytes);
BENCHMARK(encode_v1)->Arg(small_bytes)->Arg(large_bytes);
BENCHMARK(decode_legacy)->Arg(small_bytes)->Arg(large_bytes);
BENCHMARK(decode_v1)->Arg(small_bytes)->Arg(large_bytes);

BENCHMARK_MAIN();
