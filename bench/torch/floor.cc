// The RecordFunction floor of the PyTorch overhead benchmark: a global callback
// that does nothing. What every RecordFunction-based observer (strata,
// torch.profiler) pays before doing any work of its own. Loaded with ctypes by
// bench/torch/loop.py --floor.
#include <ATen/record_function.h>

namespace {

std::unique_ptr<at::ObserverContext> Start(const at::RecordFunction&) { return nullptr; }
void End(const at::RecordFunction&, at::ObserverContext*) {}

}  // namespace

extern "C" __attribute__((visibility("default"))) void strata_bench_floor_register() {
  at::addGlobalCallback(at::RecordFunctionCallback(Start, End));
}
