// Do-nothing RecordFunction callbacks for the PyTorch benchmarks, loaded with
// ctypes: the floor every RecordFunction observer pays (a global callback), and
// the alternatives weighed for strata's --ops sampled tier (RecordFunction's own
// sampling; a registered but disabled callback).
#include <ATen/record_function.h>

namespace {

std::unique_ptr<at::ObserverContext> Start(const at::RecordFunction&) { return nullptr; }
void End(const at::RecordFunction&, at::ObserverContext*) {}

}  // namespace

#define BENCH_API extern "C" __attribute__((visibility("default")))

// A global callback on every op; returns its handle.
BENCH_API uint64_t strata_bench_floor_register() {
  return at::addGlobalCallback(at::RecordFunctionCallback(Start, End));
}

// The same, sampled by RecordFunction with probability p.
BENCH_API uint64_t strata_bench_floor_register_sampled(double p) {
  return at::addGlobalCallback(at::RecordFunctionCallback(Start, End).samplingProb(p));
}

BENCH_API void strata_bench_floor_enable(uint64_t h, int on) {
  if (on) at::reenableCallback(h);
  else at::disableCallback(h);
}
