// The recorder's hot path, side by side with the clock reads it builds on and
// with an LTTng-UST tracepoint doing the same work (when built with lttng-ust).
//
// Run through bench/run_hot_path.sh, which starts a private lttng-sessiond with
// a session enabling strata_bench:event, so the LTTng figure is for an enabled,
// recording tracepoint. strata records into a temporary directory with a buffer
// large enough that no event is dropped during a measurement (the "burst"
// figures); the "sustained" figures keep the default 64 MiB buffer and the
// 100 ms flusher running, and report the drops.
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "base/clock.h"
#include "recorder/runtime.h"
#include "recorder/runtime_internal.h"
#include "strata/strata.hpp"

#if STRATA_BENCH_LTTNG
#include "lttng_tp.h"
#endif

namespace {

uint32_t g_name = 0;

void BM_ReadTsc(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(strata::ReadTsc());
}
BENCHMARK(BM_ReadTsc)->ThreadRange(1, 2);

void BM_ClockGettimeMonotonic(benchmark::State& state) {
  for (auto _ : state) {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    benchmark::DoNotOptimize(ts);
  }
}
BENCHMARK(BM_ClockGettimeMonotonic)->ThreadRange(1, 2);

void BM_StrataDisabled(benchmark::State& state) {
  uint32_t saved = __atomic_load_n(&strata_active_, __ATOMIC_RELAXED);
  if (state.thread_index() == 0) __atomic_store_n(&strata_active_, 0, __ATOMIC_RELAXED);
  for (auto _ : state) {
    strata_span_begin(g_name);
    strata_span_end();
  }
  if (state.thread_index() == 0) __atomic_store_n(&strata_active_, saved, __ATOMIC_RELAXED);
}
BENCHMARK(BM_StrataDisabled);

void DrainAfter(benchmark::State& state) {
  // Outside the timed loop: empty the buffers for the next measurement.
  if (state.thread_index() == 0) strata::recorder::FlushNow();
}

void BM_StrataInstant(benchmark::State& state) {
  for (auto _ : state) strata_instant(g_name);
  state.counters["dropped_total"] = static_cast<double>(strata_dropped_events());
  DrainAfter(state);
}
BENCHMARK(BM_StrataInstant)->ThreadRange(1, 2);

void BM_StrataSpan(benchmark::State& state) {
  for (auto _ : state) {
    strata_span_begin(g_name);
    strata_span_end();
  }
  state.counters["dropped_total"] = static_cast<double>(strata_dropped_events());
  DrainAfter(state);
}
BENCHMARK(BM_StrataSpan)->ThreadRange(1, 2);

void BM_StrataScopedSpanMacro(benchmark::State& state) {
  for (auto _ : state) {
    STRATA_SPAN("bench_scope");
  }
  DrainAfter(state);
}
BENCHMARK(BM_StrataScopedSpanMacro);

void BM_StrataCounter(benchmark::State& state) {
  double v = 0;
  for (auto _ : state) strata_counter(g_name, v += 1);
  DrainAfter(state);
}
BENCHMARK(BM_StrataCounter);

#if STRATA_BENCH_LTTNG
void BM_LttngUstTracepoint(benchmark::State& state) {
  uint32_t v = 0;
  for (auto _ : state) lttng_ust_tracepoint(strata_bench, event, v++);
}
BENCHMARK(BM_LttngUstTracepoint)->ThreadRange(1, 2);
#endif

}  // namespace

int main(int argc, char** argv) {
  // Record into a private directory unless run under `strata record` already.
  std::string own_dir;
  if (!strata_enabled()) {
    char tmpl[] = "/tmp/strata-bench-XXXXXX";
    char* dir = ::mkdtemp(tmpl);
    if (!dir) return 1;
    own_dir = dir;
    strata::recorder::Config cfg;
    cfg.dir = dir;
    cfg.chunk_bytes = 1 << 20;
    const char* sustained = std::getenv("STRATA_BENCH_SUSTAINED");
    if (sustained && std::string(sustained) == "1") {
      cfg.max_chunks = 64;  // the default 64 MiB budget, default flusher
    } else {
      cfg.max_chunks = 3072;  // 3 GiB: no drop within one measurement
      cfg.flush_ms = 60000;   // only the explicit drains between measurements
    }
    strata::Status st = strata::recorder::Start(cfg);
    if (!st.ok()) {
      std::fprintf(stderr, "cannot start recording: %s\n", st.message().c_str());
      return 1;
    }
    std::fprintf(stderr, "recording to %s (buffer %llu MiB)\n", dir,
                 static_cast<unsigned long long>(cfg.max_chunks * cfg.chunk_bytes >> 20));
  }
  g_name = strata_intern("bench_event");
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  strata::recorder::Finalize();
  // The recording only loads the hot path; it is up to 3 GiB and nobody reads it.
  if (!own_dir.empty() && !std::getenv("STRATA_BENCH_KEEP")) {
    std::error_code ec;
    std::filesystem::remove_all(own_dir, ec);
  }
  return 0;
}
