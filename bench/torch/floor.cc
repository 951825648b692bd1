// Do-nothing RecordFunction callbacks for the PyTorch benchmarks, loaded with
// ctypes: the floor every RecordFunction observer pays (a global callback), and
// the alternatives weighed for strata's --ops sampled tier (RecordFunction's own
// sampling; a registered but disabled callback).
#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/version.h>

#include <memory>

namespace {

std::unique_ptr<at::ObserverContext> Start(const at::RecordFunction&) { return nullptr; }
void End(const at::RecordFunction&, at::ObserverContext*) {}

}  // namespace

#define BENCH_API extern "C" __attribute__((visibility("default")))

// A global callback on every op; returns its handle.
BENCH_API uint64_t strata_bench_floor_register() {
  return at::addGlobalCallback(at::RecordFunctionCallback(Start, End));
}

// The same, registered for the four scopes strata's op callbacks record
// (FUNCTION, BACKWARD_FUNCTION, TORCHSCRIPT_FUNCTION, USER_SCOPE): in torch 1.13
// every registered scope costs work at each autograd node, so this is the floor
// of a callback that records what strata records.
BENCH_API uint64_t strata_bench_floor_register_strata_scopes() {
  return at::addGlobalCallback(at::RecordFunctionCallback(Start, End).scopes(
      {at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION, at::RecordScope::TORCHSCRIPT_FUNCTION,
       at::RecordScope::USER_SCOPE}));
}

// The same, sampled by RecordFunction with probability p.
BENCH_API uint64_t strata_bench_floor_register_sampled(double p) {
  return at::addGlobalCallback(at::RecordFunctionCallback(Start, End).samplingProb(p));
}

BENCH_API void strata_bench_floor_enable(uint64_t h, int on) {
  if (on) at::reenableCallback(h);
  else at::disableCallback(h);
}

// c10's own cost of reporting allocations: a memory reporter that is enabled
// and records nothing (what torch.profiler's profile_memory and strata's memory
// events both pay before doing anything). Push after taking strata's reporter
// off the thread (strata_torch_release_profiler_slot); pop before giving it back.
namespace {
struct NullReporter : c10::MemoryReportingInfoBase {
#if TORCH_VERSION_MAJOR >= 2
  void reportMemoryUsage(void*, int64_t, size_t, size_t, c10::Device) override {}
#else
  void reportMemoryUsage(void*, int64_t, int64_t, int64_t, c10::Device) override {}
#endif
  bool memoryProfilingEnabled() const override { return true; }
};
}  // namespace

BENCH_API int strata_bench_memory_floor_push() {
  if (c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) != nullptr) return 0;
  c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, std::make_shared<NullReporter>());
  return 1;
}

BENCH_API void strata_bench_memory_floor_pop() {
  c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
}
