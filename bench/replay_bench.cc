// The what-if replay (analysis/replay.h) on a 1,000-step GPU training trace
// built in memory: per step 200 ops, each launching a kernel, 8 syncs and a
// pageable copy, the program's code between them (about 900k slices and device
// rows in all). Measured side by side in one run: building the steps' graphs
// (with the breakdown they come from), replaying them with a fix, and the
// critical paths of the same steps (the analysis the diagnosis already ran).
//
//   build/bin/replay_bench --benchmark_min_time=1
//
// The target (issue 17): the what-if replay of a 1,000-step trace in under a second.
#include <benchmark/benchmark.h>

#include <memory>

#include "analysis/critical_path.h"
#include "analysis/findings.h"
#include "analysis/framework.h"
#include "analysis/replay.h"
#include "analysis/step_breakdown.h"

namespace strata {
namespace {

using model::SliceKind;

constexpr int kSteps = 1000, kOps = 200, kSyncs = 8;

std::unique_ptr<model::Trace> BuildTrace() {
  auto t = std::make_unique<model::Trace>();
  t->processes.push_back({});
  t->tracks.push_back({model::TrackKind::kThread, 0, 1});
  t->tracks.push_back({model::TrackKind::kDeviceQueue, 0, 7});
  auto& s = t->slices;
  model::StringId step = t->strings.Intern("ProfilerStep"), op = t->strings.Intern("aten::add"),
                  launch = t->strings.Intern("cudaLaunchKernel"), kernel = t->strings.Intern("add_kernel"),
                  sync = t->strings.Intern("cudaStreamSynchronize"), copy = t->strings.Intern("cudaMemcpyAsync"),
                  memcpy = t->strings.Intern("Memcpy HtoD (Pageable -> Device)");
  int64_t at = 0, device_free = 0;
  uint64_t corr = 0;
  for (int k = 0; k < kSteps; ++k) {
    int64_t step_start = at;
    uint32_t st = s.Add(at, 0, 0, step, SliceKind::kStep, static_cast<uint64_t>(k));
    // A pageable copy of the batch the call waits for.
    uint32_t c = s.Add(at + 2'000, 60'000, 0, copy, SliceKind::kRuntime);
    uint32_t cd = s.Add(at + 4'000, 56'000, 1, memcpy, SliceKind::kMemcpy);
    uint32_t cr = t->device.Add(cd, 0, 7, ++corr);
    t->device.launch[cr] = static_cast<int32_t>(c);
    t->device.bytes[cr] = 64 << 20;
    t->device.pinned[cr] = 0;
    t->device.copy_kind[cr] = model::CopyKind::kHtoD;
    device_free = at + 60'000;
    at += 64'000;
    for (int i = 0; i < kOps; ++i) {
      s.Add(at, 12'000, 0, op, SliceKind::kOp);
      uint32_t l = s.Add(at + 4'000, 5'000, 0, launch, SliceKind::kRuntime);
      int64_t ks = std::max(at + 9'000, device_free);
      uint32_t kd = s.Add(ks, 20'000, 1, kernel, SliceKind::kKernel);
      device_free = ks + 20'000;
      uint32_t kr = t->device.Add(kd, 0, 7, ++corr);
      t->device.launch[kr] = static_cast<int32_t>(l);
      at += 15'000;
      if ((i + 1) % (kOps / kSyncs) == 0) {
        int64_t end = std::max(at + 3'000, device_free + 3'000);
        s.Add(at, end - at, 0, sync, SliceKind::kRuntime);
        at = end + 10'000;
      }
    }
    s.dur[st] = at - step_start;
  }
  t->Finalize();
  return t;
}

struct Prepared {
  std::unique_ptr<model::Trace> t = BuildTrace();
  std::vector<analysis::StepWindow> windows;
  Prepared() {
    for (const auto& st : analysis::Training(*t, {}).steps)
      windows.push_back({st.number, st.ts, st.dur, 0, true});
  }
};

Prepared& Data() {
  static Prepared p;
  return p;
}

void BM_ReplayBuild(benchmark::State& state) {
  Prepared& p = Data();
  for (auto _ : state) {
    std::vector<std::vector<analysis::HostInterval>> timelines;
    analysis::BreakdownWindows(*p.t, p.windows, &timelines);
    analysis::Replay r(*p.t, p.windows, timelines);
    benchmark::DoNotOptimize(r.steps().size());
  }
  state.counters["steps"] = static_cast<double>(p.windows.size());
  state.counters["slices"] = static_cast<double>(p.t->slices.size());
}
BENCHMARK(BM_ReplayBuild)->Unit(benchmark::kMillisecond);

void BM_ReplayRunSyncsRemoved(benchmark::State& state) {
  Prepared& p = Data();
  std::vector<std::vector<analysis::HostInterval>> timelines;
  analysis::BreakdownWindows(*p.t, p.windows, &timelines);
  analysis::Replay r(*p.t, p.windows, timelines);
  analysis::ReplayFix fix;
  fix.drop_wait = [](const analysis::ReplayStep&, const analysis::ReplayPiece& piece) {
    return piece.wait == analysis::ReplayPiece::kWaitDevice;
  };
  double gain = 0;
  for (auto _ : state) gain = r.Run(fix).GainPct();
  state.counters["gain_pct"] = gain;
  state.counters["baseline_error_pct"] = r.BaselineErrorPct();
}
BENCHMARK(BM_ReplayRunSyncsRemoved)->Unit(benchmark::kMillisecond);

// The peer in the same run: the critical paths of the same 1,000 steps.
void BM_CriticalPaths(benchmark::State& state) {
  Prepared& p = Data();
  analysis::CriticalPathOptions o;
  o.max_steps = 1u << 30;
  for (auto _ : state) benchmark::DoNotOptimize(analysis::CriticalPaths(*p.t, o).size());
}
BENCHMARK(BM_CriticalPaths)->Unit(benchmark::kMillisecond);

// Everything the report's findings cost: critical paths, breakdown, graphs and
// every rule's replay.
void BM_Diagnose(benchmark::State& state) {
  Prepared& p = Data();
  size_t n = 0;
  for (auto _ : state) n = analysis::Diagnose(*p.t).size();
  state.counters["findings"] = static_cast<double>(n);
}
BENCHMARK(BM_Diagnose)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace strata

BENCHMARK_MAIN();
