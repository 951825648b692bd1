// CUPTI activity-buffer decoding rate (target: >= 20 million records/s).
//
// A CUPTI buffer of synthetic records as the driver fills them (a training-like
// mix: kernels, copies, memsets, syncs; a few hundred distinct kernel names),
// iterated by libcupti itself:
//   BM_IterateOnly        cuptiActivityGetNextRecord alone: the floor any CUPTI client pays
//   BM_DecodeNoEmit       + strata's decoding (kinds, names, streams), nothing written
//   BM_DecodeIntoRecorder + encoding into the recorder's per-thread buffers (the real path;
//                           the flusher writes them out concurrently), chunks recycled
//   BM_DecodeIntoRecorderFreshBuffers  the same, bursts back to back: chunks are fresh memory
//
//   build/bin/bench_cupti_decode [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>

#include <cupti.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collectors/cupti/cupti_collector.h"
#include "recorder/runtime_internal.h"

namespace {

constexpr size_t kBufferBytes = 8u << 20;

struct SyntheticBuffer {
  uint8_t* data = nullptr;
  size_t used = 0;
  size_t records = 0;
  uint64_t span_ns = 0;  // from the first start to the last end
  std::vector<std::string> names;

  SyntheticBuffer() {
    data = static_cast<uint8_t*>(std::aligned_alloc(64, kBufferBytes));
    for (int i = 0; i < 300; ++i) names.push_back("_Z12gemm_kernel" + std::to_string(i) + "PfS_S_iii");
    uint64_t t = 1'000'000'000;
    uint32_t corr = 1;
    auto add = [&](const void* r, size_t size) {
      if (used + size > kBufferBytes) return false;
      std::memcpy(data + used, r, size);
      used += (size + 7) & ~size_t{7};
      ++records;
      return true;
    };
    for (uint32_t i = 0;; ++i) {
      uint32_t pick = i % 20;
      bool ok;
      if (pick < 14) {
        CUpti_ActivityKernel10 k{};
        k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        k.start = t;
        k.end = t + 5000;
        k.streamId = 7 + i % 4;
        k.gridX = 128, k.gridY = 1, k.gridZ = 1, k.blockX = 256, k.blockY = 1, k.blockZ = 1;
        k.registersPerThread = 64;
        k.correlationId = corr++;
        k.name = names[(i * 7) % names.size()].c_str();
        ok = add(&k, sizeof k);
      } else if (pick < 18) {
        CUpti_ActivityMemcpy6 m{};
        m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
        m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
        m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
        m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
        m.bytes = 1 << 20;
        m.start = t;
        m.end = t + 20000;
        m.streamId = 7;
        m.correlationId = corr++;
        ok = add(&m, sizeof m);
      } else if (pick < 19) {
        CUpti_ActivityMemset4 m{};
        m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
        m.bytes = 4096;
        m.start = t;
        m.end = t + 1000;
        m.streamId = 8;
        m.correlationId = corr++;
        ok = add(&m, sizeof m);
      } else {
        CUpti_ActivitySynchronization2 s{};
        s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
        s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
        s.start = t;
        s.end = t + 3000;
        s.streamId = 7;
        s.correlationId = corr++;
        ok = add(&s, sizeof s);
      }
      if (!ok) break;
      t += 6000;
    }
    span_ns = t + 20000 - 1'000'000'000;
  }
  ~SyntheticBuffer() { std::free(data); }
};

SyntheticBuffer& Buffer() {
  static SyntheticBuffer b;
  return b;
}

void BM_IterateOnly(benchmark::State& state) {
  SyntheticBuffer& b = Buffer();
  uint64_t kinds = 0;
  for (auto _ : state) {
    CUpti_Activity* r = nullptr;
    while (cuptiActivityGetNextRecord(b.data, b.used, &r) == CUPTI_SUCCESS) kinds += r->kind;
  }
  benchmark::DoNotOptimize(kinds);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * b.records));
}
BENCHMARK(BM_IterateOnly)->Unit(benchmark::kMillisecond);

void BM_DecodeNoEmit(benchmark::State& state) {
  SyntheticBuffer& b = Buffer();
  strata::cupti::ThreadMap threads;
  strata::cupti::ActivityDecoder d(&threads);
  d.set_emit(false);
  for (auto _ : state) d.DecodeBuffer(b.data, b.used);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * b.records));
}
BENCHMARK(BM_DecodeNoEmit)->Unit(benchmark::kMillisecond);

// Records handed to the recorder since it started, to check that the trace has them all.
uint64_t g_emitted = 0;

// Each pass over the buffer is shifted later than the previous one (through the
// decoder's clock offset, as if CUPTI had delivered a new buffer), so that the
// device streams see time move forward as they do in a real run, rather than
// the same interval again that the recorder would clamp.
void DecodeNext(strata::cupti::ActivityDecoder* d, SyntheticBuffer& b) {
  static int64_t offset = 0;
  d->set_time_offset(offset);
  d->DecodeBuffer(b.data, b.used);
  offset += static_cast<int64_t>(b.span_ns);
}

strata::cupti::ActivityDecoder* RecorderDecoder() {
  static bool started = [] {
    std::string dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/strata-bench-cupti";
    std::system(("rm -rf " + dir).c_str());
    strata::recorder::Config cfg;
    cfg.dir = dir;
    cfg.max_chunks = 4096;  // 1 GiB of 256 KiB chunks: bursts of buffers are absorbed, not dropped
    return strata::recorder::Start(cfg).ok();
  }();
  if (!started) return nullptr;
  static strata::cupti::ThreadMap threads;
  static strata::cupti::ActivityDecoder d(&threads);
  // The recorder's chunks exist before the first measured burst (a process's
  // first burst also pays the kernel's page faults on them).
  static bool warm = [&] {
    SyntheticBuffer& b = Buffer();
    for (int i = 0; i < 20; ++i) DecodeNext(&d, b);
    g_emitted += 20 * b.records;
    strata::recorder::FlushNow();
    return true;
  }();
  (void)warm;
  return &d;
}

// One burst of 20 buffers (~0.95 M records), as CUPTI delivers them at a flush.
// Rates are per CPU second of the decoding thread; the flusher runs on another.
void DecodeBurst(benchmark::State& state, bool wait_for_flusher) {
  SyntheticBuffer& b = Buffer();
  strata::cupti::ActivityDecoder* d = RecorderDecoder();
  if (!d) {
    state.SkipWithError("cannot start the recorder");
    return;
  }
  uint64_t dropped_before = strata::recorder::DroppedTotal();
  for (auto _ : state) DecodeNext(d, b);
  g_emitted += state.iterations() * b.records;
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * b.records));
  state.counters["dropped"] = static_cast<double>(strata::recorder::DroppedTotal() - dropped_before);
  if (wait_for_flusher) {
    // Untimed: the flusher writes the burst out (its chunks go back to the pool
    // for the next one), and every record decoded so far must be in the trace.
    strata::recorder::FlushNow();
    strata::recorder::RecorderStats st = strata::recorder::Stats();
    state.counters["unwritten"] = static_cast<double>(g_emitted - st.events_written);
    state.counters["clamped"] = static_cast<double>(st.clamped);
  }
}

// Steady state: each burst finds the chunks the flusher recycled after the
// previous one, as in a traced program whose flusher keeps up between flushes.
void BM_DecodeIntoRecorder(benchmark::State& state) { DecodeBurst(state, true); }
BENCHMARK(BM_DecodeIntoRecorder)->Unit(benchmark::kMillisecond)->Iterations(20);

// Bursts back to back, the flusher never waited for: most chunks are fresh
// memory (the recorder's pool grows by pre-faulted huge-page slabs), so this
// adds the kernel's zeroing of new pages to the decoding thread.
void BM_DecodeIntoRecorderFreshBuffers(benchmark::State& state) { DecodeBurst(state, false); }
BENCHMARK(BM_DecodeIntoRecorderFreshBuffers)->Unit(benchmark::kMillisecond)->Iterations(20);

}  // namespace

BENCHMARK_MAIN();
