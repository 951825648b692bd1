// The communication analysis (analysis/comms.h) on a job built in memory:
// R ranks, each with S steps of K collectives (an all-reduce per gradient
// bucket), every rank's collectives entered with jitter and one rank late by
// a few milliseconds in every step; each step a kStep slice on its rank's
// main thread with an op inside. Measures AnalyzeComms (matching the ranks'
// collectives by sequence number, waits, lateness, the straggler and its
// phase) at sizes up to issue 21's 64 ranks x 1M events.
//
//   build/bin/comms_bench --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <memory>
#include <random>

#include "analysis/comms.h"

namespace strata {
namespace {

std::unique_ptr<model::Trace> BuildJob(int ranks, int steps, int per_step) {
  auto t = std::make_unique<model::Trace>();
  model::StringId step = t->strings.Intern("step"), op = t->strings.Intern("aten::mm"),
                  loader = t->strings.Intern("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"),
                  coll = t->strings.Intern("nccl:all_reduce");
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> jitter(0, 200'000);
  const int64_t step_ns = 100'000'000, late_ns = 5'000'000;
  auto& c = t->collectives;
  c.Reserve(static_cast<size_t>(ranks) * static_cast<size_t>(steps) * static_cast<size_t>(per_step));
  for (int r = 0; r < ranks; ++r) {
    model::Process p;
    p.pid = 1000 + r;
    p.rank = r;
    t->processes.push_back(p);
    t->tracks.push_back({model::TrackKind::kThread, static_cast<uint32_t>(r), 1000 + r});
    t->tracks.push_back({model::TrackKind::kThread, static_cast<uint32_t>(r), 2000 + r});
    uint32_t main = static_cast<uint32_t>(2 * r), worker = main + 1;
    bool slow = r == 5;
    for (int s = 0; s < steps; ++s) {
      int64_t at = s * step_ns;
      t->slices.Add(at, step_ns, main, step, model::SliceKind::kStep, static_cast<uint64_t>(s));
      int64_t input = slow ? late_ns : 100'000;
      t->slices.Add(at, input, main, loader, model::SliceKind::kSpan, 0);
      t->slices.Add(at + input, 60'000'000, main, op, model::SliceKind::kOp, 0);
      for (int k = 0; k < per_step; ++k) {
        int64_t enq = at + input + 60'000'000 + k * 1'000'000 + jitter(rng);
        c.process.push_back(static_cast<uint32_t>(r));
        c.name.push_back(coll);
        c.seq.push_back(static_cast<uint64_t>(s) * static_cast<uint64_t>(per_step) + static_cast<uint64_t>(k));
        c.ts.push_back(enq);
        c.dur.push_back(at + late_ns + 60'000'000 + 100'000 + (k + 1) * 1'000'000 + 500'000 - enq);
        c.track.push_back(main);
        c.end_track.push_back(worker);
        c.bytes.push_back(int64_t{25} << 20);
        c.tensors.push_back(1);
      }
    }
  }
  t->Finalize();
  return t;
}

void BM_AnalyzeComms(benchmark::State& state) {
  auto t = BuildJob(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)), 10);
  analysis::CommsSummary s;
  for (auto _ : state) {
    s = analysis::AnalyzeComms(*t);
    benchmark::DoNotOptimize(s);
  }
  state.counters["collectives"] = static_cast<double>(t->collectives.size());
  state.counters["straggler_rank"] = s.straggler >= 0 ? static_cast<double>(s.ranks[static_cast<size_t>(s.straggler)].rank) : -1;
  state.counters["rows/s"] = benchmark::Counter(static_cast<double>(t->collectives.size()), benchmark::Counter::kIsIterationInvariantRate);
}
// 8 ranks x 1,000 steps; 64 ranks x 1,000 steps (640k collectives); 64 ranks x
// 10,000 steps (6.4M collectives, with the steps' slices ~8.3M rows: 64 x 130k).
BENCHMARK(BM_AnalyzeComms)->Args({8, 1000})->Args({64, 1000})->Args({64, 10000})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace strata

BENCHMARK_MAIN();
