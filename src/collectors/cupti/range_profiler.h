// `strata record --gpu-metrics`: per-kernel hardware metrics through CUPTI's
// range profiler (the CUDA 12.6+ API: cupti_range_profiler.h for the target
// side, cupti_profiler_host.h for metric configuration and evaluation).
//
// Auto ranges with kernel replay: every kernel in the window becomes one range,
// replayed as many times as the metrics need passes, so kernels in the window
// run serialized and their activity timings are not representative (the
// collector status says so). The window is the first N kernels after skipping
// M (`kernels=N[,skip=M]`), or the kernels launched while the program's step
// number (strata_step_begin) is within A..B (`steps=A-B`).
//
// Results: one kernel_metrics event per profiled kernel, joined to its kernel
// by correlation id (the i-th range is the i-th launch in the window): FLOPs
// per precision (add + mul + 2 x fma thread instructions), DRAM bytes read +
// written, achieved occupancy, and the metric values as CUPTI reports them.
//
// Not run on a GPU here (none available): the host-side half (metric names,
// passes) is exercised offline by the tests; the target side needs a GPU.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <string>
#include <vector>

namespace strata::cupti {

struct MetricWindow {
  enum class Kind { kKernels, kSteps } kind = Kind::kKernels;
  uint64_t first = 0;  // kernels to skip, or the first step
  uint64_t last = 0;   // the last kernel index (exclusive), or the last step (inclusive)
};
// Parses "kernels=N[,skip=M]" or "steps=A-B"; false with `error` set otherwise.
bool ParseMetricWindow(const std::string& spec, MetricWindow* w, std::string* error);

// The metrics strata asks for, and how they combine into the reported values.
const std::vector<const char*>& ProfilerMetrics();

struct HostMetricCheck {
  bool ok = false;
  size_t passes = 0;           // replays per kernel for ProfilerMetrics() on this chip
  std::string error;
};
// Validates ProfilerMetrics() for a chip ("GH100", "GA100", ...) with CUPTI's
// host-side profiler API only: no GPU or driver needed.
HostMetricCheck CheckMetricsOnHost(const char* chip);

class RangeProfiler {
 public:
  explicit RangeProfiler(MetricWindow w) : window_(w) {}
  // RESOURCE/CONTEXT_CREATED: sets the profiler up on the first context.
  void OnContext(CUcontext ctx, uint32_t device);
  // Every kernel launch (runtime/driver API ENTER), in launch order.
  void OnLaunch(uint32_t correlation, uint64_t step);
  // Stops, decodes and emits what the window collected (at exit or window end).
  void Finish();
  const std::string& problem() const { return problem_; }
  uint64_t kernels_profiled() const { return emitted_; }

 private:
  bool Setup(CUcontext ctx, uint32_t device);
  void Start();
  void StopAndEmit();
  bool InWindow(uint64_t step) const;
  void Fail(const std::string& what, CUptiResult r);

  MetricWindow window_;
  CUcontext ctx_ = nullptr;
  uint32_t device_ = 0;
  bool ready_ = false, running_ = false, done_ = false;
  uint64_t launches_ = 0;
  uint64_t emitted_ = 0;
  std::vector<uint32_t> correlations_;  // launches in the current pass, in order
  std::vector<uint8_t> availability_, config_, counter_data_;
  void* host_ = nullptr;       // CUpti_Profiler_Host_Object*
  void* profiler_ = nullptr;   // CUpti_RangeProfiler_Object*
  std::string problem_;
  size_t max_ranges_ = 0;
};

}  // namespace strata::cupti
