// Per-op cost of strata's PyTorch observer, next to PyTorch's own RecordFunction
// floor, in one process (Google Benchmark). Every iteration runs one small aten
// op (at::mul on 8x8 floats, allocating its result) from C++, so the numbers are
// the observer's cost per op without Python around it:
//
//   untraced        strata attached, its op callbacks disabled, no memory events
//   floor           + a do-nothing global RecordFunction callback (what any
//                   RecordFunction observer pays first)
//   strata_all      strata's op callbacks (--ops all), no memory events
//   strata_memory   strata_all + allocator events (the default)
//   strata_shapes   the detail tier (--shapes)
//   floor_4_scopes  (--alternate only) strata detached; a do-nothing callback
//                   registered for the four scopes strata records, where the
//                   floor registers all ten (torch 1.13 pays per registered
//                   scope at every autograd node): the last line, all-floor_4,
//                   is strata's callbacks above it
//   memory_floor    (--alternate only) no strata tier; a do-nothing memory
//                   reporter instead of strata's: c10's own cost of reporting
//                   allocations (what torch.profiler's profile_memory pays too)
// Modes are switched through the control block, as `strata record` would.
//
//   build/bin/torch_observer_bench --benchmark_repetitions=30 --benchmark_min_time=0.3 \
//       --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
//
// On a machine shared with other work the per-benchmark numbers drift with the
// neighbours. --alternate SECONDS switches mode every 2000 ops (~2 ms) instead,
// round robin, so that every mode sees the same drift, and prints the median
// of the per-round differences to the floor, with a 95% confidence interval
// (the op's thread; and the whole process, which adds strata's flusher
// encoding the events):
//   build/bin/torch_observer_bench --alternate 20 [mul|tiny]
// "tiny" runs a training step of bench/torch/loop.py's tiny model in C++ (the
// event mix of inprocess.py, without Python); a seventh mode, torch_profiler,
// runs the slices inside torch's own (Kineto) profiler, its exit not counted.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <unistd.h>

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/version.h>

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <random>
#include <cstdio>
#include <vector>
#include <cstdlib>
#include <string>
#include <thread>

#include "format/control.h"
#include "recorder/runtime.h"
#include "recorder/runtime_internal.h"

namespace {

using strata::format::ControlBlock;
using strata::format::OpsMode;

ControlBlock* g_control = nullptr;
at::CallbackHandle g_floor = 0;
at::CallbackHandle g_floor4 = 0;  // the floor with strata's four scopes (--alternate only)

// The floor and c10's memory-reporting floor come from the floor library that
// inprocess.py loads too (bench/torch/floor.cc): one definition of each.
extern "C" uint64_t strata_bench_floor_register();
extern "C" uint64_t strata_bench_floor_register_strata_scopes();
extern "C" int strata_bench_memory_floor_push();
extern "C" void strata_bench_memory_floor_pop();

void NoEnd(const at::RecordFunction&, at::ObserverContext*) {}

enum Mode { kUntraced, kFloor, kAll, kMemory, kShapes };

void Switch(Mode m) {
  ControlBlock* cb = g_control;
  cb->ops_mode.store(static_cast<uint32_t>(m >= kAll ? OpsMode::kAll : OpsMode::kOff));
  cb->detail.store(m == kShapes ? 1 : 0);
  cb->memory.store(m == kMemory || m == kShapes ? 1 : 0);
  cb->generation.fetch_add(1, std::memory_order_release);
  if (m == kFloor) at::reenableCallback(g_floor);
  else at::disableCallback(g_floor);
  // The observer's control thread polls every 20 ms.
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
}

using SetTiers = void (*)(int, int, int);
SetTiers g_set_tiers = nullptr;
int (*g_release_slot)() = nullptr;
void (*g_set_scopes)(int) = nullptr;
void (*g_reclaim_slot)() = nullptr;

// Switches at once (no control-block polling), for --alternate.
void SwitchNow(Mode m) {
  g_set_tiers(m >= kAll ? 2 : 0, m == kShapes ? 1 : 0, m == kMemory || m == kShapes ? 1 : 0);
  if (m == kFloor) at::reenableCallback(g_floor);
  else at::disableCallback(g_floor);
}

uint64_t CpuNs(clockid_t c) {
  timespec t;
  clock_gettime(c, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

// The workloads of --alternate. "mul": one small aten op, no autograd (the
// cheapest path: a name with no sequence number). "tiny": a training step of
// the Python benchmark's tiny model in C++ (100 x (mul, tanh, mul) on 8x8 with
// a parameter, sum, backward): forward ops with sequence numbers, autograd
// nodes and the engine's evaluate_function scopes, whose names are built per
// call, the event mix of bench/torch/inprocess.py without Python.
struct Workload {
  virtual ~Workload() = default;
  virtual void Run() = 0;
  virtual const char* name() const = 0;
};

struct MulWorkload final : Workload {
  at::Tensor a = at::randn({8, 8}), b = at::randn({8, 8});
  void Run() override { benchmark::DoNotOptimize(at::mul(a, b).data_ptr()); }
  const char* name() const override { return "at::mul 8x8"; }
};

struct TinyWorkload final : Workload {
  at::Tensor x = at::randn({8, 8}), w = (at::randn({8, 8}) * 0.1).set_requires_grad(true);
  void Run() override {
    at::Tensor h = x;
    for (int i = 0; i < 100; ++i) h = at::tanh(h * 0.5) * w;
    h.sum().backward();
    w.mutable_grad().reset();
  }
  const char* name() const override { return "tiny training step"; }
};

std::atomic<uint64_t> g_counted{0};
std::unique_ptr<at::ObserverContext> CountStart(const at::RecordFunction&) {
  g_counted.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

// RecordFunction events per run of the workload (what every callback sees).
double EventsPerRun(Workload& w) {
  auto h = at::addGlobalCallback(at::RecordFunctionCallback(CountStart, NoEnd));
  g_counted = 0;
  constexpr int kRuns = 10;
  for (int i = 0; i < kRuns; ++i) w.Run();
  at::removeCallback(h);
  return static_cast<double>(g_counted.load()) / kRuns;
}

int Alternate(double seconds, Workload& work) {
  const char* names[] = {"untraced", "floor", "strata_all", "strata_memory", "strata_shapes", "memory_floor",
                         "torch_profiler", "no_reporter", "floor_4_scopes"};
  constexpr int kModes = 9, kMemoryFloor = 5, kProfiler = 6, kFloor4 = 8;
  double events = EventsPerRun(work);
  // ~2 ms slices whatever the workload.
  int runs = std::max(1, static_cast<int>(2000.0 / events));
  std::vector<double> thread_ns[kModes], process_ns[kModes];
  namespace tp = torch::profiler::impl;
  const tp::ProfilerConfig profiler_config(tp::ProfilerState::KINETO, false, false, false, false, false);
  // Rounds: every mode once, in a shuffled order (no mode always follows the
  // same one). Differences to the floor are taken within a round, between
  // slices a few ms apart, so the machine's slow drift cancels out of them.
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::mt19937 rng(42);
  int order[kModes];
  for (int i = 0; i < kModes; ++i) order[i] = i;
  while (std::chrono::steady_clock::now() < end) {
    std::shuffle(order, order + kModes, rng);
    for (int mi : order) {
      Mode m = mi >= kMemoryFloor ? kUntraced : static_cast<Mode>(mi);
      SwitchNow(m);
      if (mi == kFloor4) {  // the do-nothing callback alone, with strata's scopes
        g_set_scopes(0);
        at::reenableCallback(g_floor4);
      }
      bool swapped = mi >= kMemoryFloor && g_release_slot();
      bool pushed = mi == kMemoryFloor && swapped && strata_bench_memory_floor_push();
      if (mi == kProfiler) torch::autograd::profiler::enableProfiler(profiler_config, {tp::ActivityType::CPU});
      for (int i = 0; i < 2; ++i) work.Run();  // settle
      uint64_t t0 = CpuNs(CLOCK_THREAD_CPUTIME_ID), p0 = CpuNs(CLOCK_PROCESS_CPUTIME_ID);
      for (int i = 0; i < runs; ++i) work.Run();
      double n = events * runs;
      thread_ns[mi].push_back(static_cast<double>(CpuNs(CLOCK_THREAD_CPUTIME_ID) - t0) / n);
      process_ns[mi].push_back(static_cast<double>(CpuNs(CLOCK_PROCESS_CPUTIME_ID) - p0) / n);
      // The profiler's post-processing at exit is not counted (overhead.py does).
      if (mi == kProfiler) torch::autograd::profiler::disableProfiler();
      if (pushed) strata_bench_memory_floor_pop();
      if (swapped) g_reclaim_slot();
      if (mi == kFloor4) {
        at::disableCallback(g_floor4);
        g_set_scopes(1);
      }
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  // Median of the per-round differences to the floor, with a 95% confidence
  // interval of that median (order statistics: n/2 -+ 0.98 sqrt(n)).
  auto paired = [](const std::vector<double>& x, const std::vector<double>& floor) {
    std::vector<double> d;
    for (size_t i = 0; i < x.size() && i < floor.size(); ++i) d.push_back(x[i] - floor[i]);
    std::sort(d.begin(), d.end());
    struct R {
      double med, lo, hi;
    } r{0, 0, 0};
    if (d.empty()) return r;
    size_t n = d.size(), half = static_cast<size_t>(0.98 * std::sqrt(static_cast<double>(n)));
    r.med = d[n / 2];
    r.lo = d[n / 2 > half ? n / 2 - half : 0];
    r.hi = d[std::min(n - 1, n / 2 + half)];
    return r;
  };
  std::printf("%s, %.0f RecordFunction events per run; CPU ns per event (%zu rounds of one slice of %d runs per mode)\n",
              work.name(), events, thread_ns[0].size(), runs);
  std::printf("  %-15s %9s %26s %9s %26s\n", "mode", "thread", "vs floor [95% CI]", "process", "vs floor [95% CI]");
  for (int m = 0; m < kModes; ++m) {
    auto t = paired(thread_ns[m], thread_ns[kFloor]), p = paired(process_ns[m], process_ns[kFloor]);
    std::printf("  %-15s %9.1f %+9.1f [%+7.1f, %+7.1f] %9.1f %+9.1f [%+7.1f, %+7.1f]\n", names[m], median(thread_ns[m]),
                t.med, t.lo, t.hi, median(process_ns[m]), p.med, p.lo, p.hi);
  }
  // strata's op callbacks above a do-nothing one registered for the same scopes.
  auto t4 = paired(thread_ns[kAll], thread_ns[kFloor4]), p4 = paired(process_ns[kAll], process_ns[kFloor4]);
  std::printf("  %-15s %9s %+9.1f [%+7.1f, %+7.1f] %9s %+9.1f [%+7.1f, %+7.1f]\n", "all-floor_4", "", t4.med, t4.lo,
              t4.hi, "", p4.med, p4.lo, p4.hi);
  return 0;
}

void BM_Op(benchmark::State& state) {
  Switch(static_cast<Mode>(state.range(0)));
  at::Tensor a = at::randn({8, 8}), b = at::randn({8, 8});
  for (auto _ : state) {
    at::Tensor c = at::mul(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  // Let the flusher drain before the next mode (buffers are finite).
  strata::recorder::FlushNow();
}
BENCHMARK(BM_Op)
    ->ArgName("mode")
    ->Arg(kUntraced)
    ->Arg(kFloor)
    ->Arg(kAll)
    ->Arg(kMemory)
    ->Arg(kShapes);

}  // namespace

int main(int argc, char** argv) {
  char tmpl[] = "/tmp/strata-observer-bench-XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  std::string dir = tmpl;
  ControlBlock cb;
  strata::format::InitControlBlock(&cb);
  cb.ops_mode.store(static_cast<uint32_t>(OpsMode::kOff));
  cb.memory.store(0);
  if (!strata::format::WriteControlFile(dir + "/control", cb).ok()) return 1;
  setenv("STRATA_TRACE_DIR", dir.c_str(), 1);
  if (!strata::recorder::Start(strata::recorder::ConfigFromEnv()).ok()) return 1;
  auto mapped = strata::format::MapControlFile(dir + "/control");
  if (!mapped.ok()) return 1;
  g_control = *mapped;
  void* h = dlopen(STRATA_TORCH_LIB, RTLD_NOW);
  auto start = h ? reinterpret_cast<int (*)(const char*)>(dlsym(h, "strata_torch_start")) : nullptr;
  if (!start || start("native") != 0) {
    std::fprintf(stderr, "cannot start the observer from %s\n", STRATA_TORCH_LIB);
    return 1;
  }
  g_floor = strata_bench_floor_register();
  at::disableCallback(g_floor);
  g_floor4 = strata_bench_floor_register_strata_scopes();
  at::disableCallback(g_floor4);
  g_set_scopes = reinterpret_cast<void (*)(int)>(dlsym(h, "strata_torch_set_scopes"));
  g_set_tiers = reinterpret_cast<SetTiers>(dlsym(h, "strata_torch_set_tiers"));
  g_release_slot = reinterpret_cast<int (*)()>(dlsym(h, "strata_torch_release_profiler_slot"));
  g_reclaim_slot = reinterpret_cast<void (*)()>(dlsym(h, "strata_torch_reclaim_profiler_slot"));
  int rc = 0;
  if (argc == 5 && std::string(argv[1]) == "--fixed" && g_set_tiers) {
    // For instruction counts (valgrind --tool=callgrind): N runs of one workload
    // in one mode, nothing else; compare two modes' totals.
    MulWorkload mul;
    TinyWorkload tiny;
    Workload& w = std::string(argv[3]) == "tiny" ? static_cast<Workload&>(tiny) : static_cast<Workload&>(mul);
    std::string mode = argv[4];
    const char* modes[] = {"untraced", "floor", "all", "memory", "shapes"};
    int m = 0;
    while (m < 5 && mode != modes[m]) ++m;
    if (m == 5) return 2;
    SwitchNow(static_cast<Mode>(m));
    int n = std::atoi(argv[2]);
    for (int i = 0; i < n; ++i) w.Run();
  } else if ((argc == 3 || argc == 4) && std::string(argv[1]) == "--alternate" && g_set_tiers && g_release_slot &&
      g_reclaim_slot && g_set_scopes) {
    std::string which = argc == 4 ? argv[3] : "mul";
    MulWorkload mul;
    TinyWorkload tiny;
    rc = Alternate(std::atof(argv[2]), which == "tiny" ? static_cast<Workload&>(tiny) : static_cast<Workload&>(mul));
  } else {
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
  }
  strata::recorder::Finalize();
  std::string rm = "rm -rf " + dir;
  return std::system(rm.c_str()) == 0 ? rc : 1;
}
