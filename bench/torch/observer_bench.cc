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
// Modes are switched through the control block, as `strata record` would.
//
//   build/bin/torch_observer_bench --benchmark_repetitions=30 --benchmark_min_time=0.3 \
//       --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
//
// On a loaded machine the time per op is noisy; counting cycles and
// instructions of a fixed number of ops is not (two runs with N and 2N ops,
// differenced, cancel start-up):
//   perf stat -e cycles:u,instructions:u build/bin/torch_observer_bench --fixed MODE N
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <unistd.h>

#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <chrono>
#include <cstdio>
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

std::unique_ptr<at::ObserverContext> FloorStart(const at::RecordFunction&) { return nullptr; }
void FloorEnd(const at::RecordFunction&, at::ObserverContext*) {}

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
  g_floor = at::addGlobalCallback(at::RecordFunctionCallback(FloorStart, FloorEnd));
  at::disableCallback(g_floor);
  if (argc == 4 && std::string(argv[1]) == "--fixed") {
    Switch(static_cast<Mode>(std::atoi(argv[2])));
    long n = std::atol(argv[3]);
    at::Tensor a = at::randn({8, 8}), b = at::randn({8, 8});
    for (long i = 0; i < n; ++i) {
      at::Tensor c = at::mul(a, b);
      benchmark::DoNotOptimize(c.data_ptr());
    }
  } else {
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
  }
  strata::recorder::Finalize();
  std::string rm = "rm -rf " + dir;
  return std::system(rm.c_str()) == 0 ? 0 : 1;
}
