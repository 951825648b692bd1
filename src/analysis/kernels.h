// Kernel-level analyses over device activity from any source: the top kernels
// and their share of GPU time, the kernel duration distribution, launch
// statistics (CPU time of each launch call, the delay until the device starts
// the work, short kernels) per API, and kernels grouped by the framework op
// that launched them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/gpu.h"
#include "analysis/options.h"
#include "analysis/summary.h"
#include "model/trace.h"

namespace strata::analysis {

struct KernelRow {
  std::string name;
  WorkType type = WorkType::kCompute;  // copies and fills appear as memory
  uint64_t count = 0;
  int64_t total_ns = 0;
  double pct_gpu_time = 0;  // share of the summed duration of all GPU work
  Distribution duration;
};
struct DurationBucket {
  int64_t upper_ns;  // INT64_MAX for the last
  uint64_t count = 0;
  int64_t total_ns = 0;
};
struct KernelSummary {
  int64_t gpu_time_ns = 0;  // summed duration of all GPU work (kernels, copies, fills)
  uint64_t kernels = 0;     // compute and communication kernels
  Distribution duration;    // of those kernels
  std::vector<DurationBucket> histogram;  // <1us, <10us, <100us, <1ms, <10ms, longer
  std::vector<KernelRow> rows;            // by total time, descending
};
KernelSummary Kernels(const model::Trace& t, const AnalysisOptions& opt);
KernelSummary Kernels(const model::Trace& t, const GpuWorkSet& work);

struct LaunchApiStats {
  std::string name;        // cudaLaunchKernel, clEnqueueNDRangeKernel, ...
  uint64_t launches = 0;   // device activities launched through it
  Distribution cpu_ns;     // duration of the API call
  Distribution delay_ns;   // device start - API call end, at least 0 (HTA's launch delay)
  Distribution start_ns;   // device start - API call start
};
struct LaunchStats {
  uint64_t launches = 0;
  uint64_t unlinked = 0;       // device activities with no launching call in the trace
  uint64_t short_kernels = 0;  // kernels shorter than their launch call (call <= cutoff)
  uint64_t slow_launches = 0;  // calls longer than opt.launch_cpu_cutoff_ns
  uint64_t late_starts = 0;    // delay longer than opt.launch_delay_cutoff_ns
  Distribution cpu_ns, delay_ns;
  std::vector<LaunchApiStats> by_api;  // by launches, descending
};
LaunchStats Launches(const model::Trace& t, const AnalysisOptions& opt);

// The innermost framework op around a slice on its thread, or kNone.
int32_t EnclosingOp(const model::Trace& t, int32_t slice);

struct OpKernelRow {
  std::string op;      // innermost op around the launch call; "(no op)" when none
  std::string kernel;
  uint64_t count = 0;
  int64_t total_ns = 0;
};
std::vector<OpKernelRow> KernelsByOp(const model::Trace& t, const AnalysisOptions& opt);
std::vector<OpKernelRow> KernelsByOp(const model::Trace& t, const GpuWorkSet& work);

}  // namespace strata::analysis
