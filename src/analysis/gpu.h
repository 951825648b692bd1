// GPU time analyses over device activity, whatever recorded it (PyTorch
// profiler, strata's CUDA/OpenCL collectors): the temporal breakdown
// (compute / communication / memory / idle), the idle-time split (host wait /
// kernel wait / other), the kernel-type overlap table and per-name kernel
// statistics, and HTA's "augmented counters" (queue length per stream, memory
// bandwidth per copy kind over time).
//
// Definitions follow HTA (HolisticTraceAnalysis); AnalysisOptions::hta_compat
// reproduces its numbers exactly, see options.h for what changes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/options.h"
#include "base/int_math.h"
#include "model/trace.h"

namespace strata::analysis {

enum class WorkType : uint8_t { kCompute, kCommunication, kMemory, kOther };
const char* WorkTypeName(WorkType t);  // "compute", "communication", "memory", "other"

// HTA's kernel classification by name: ^nccl.*Kernel -> communication;
// ^Memcpy, ^Memset, ^dma -> memory; names containing "Memcpy" or "Sync", or
// starting with "Memset" -> other; everything else compute.
WorkType ClassifyByName(std::string_view name);

// One interval of GPU work.
struct GpuWork {
  int64_t ts = 0, end = 0;  // ns; in HTA mode whole microseconds (x1000)
  uint32_t slice = 0;
  int32_t device_row = model::kNone;  // kNone: a host op with a stream argument (HTA mode)
  int64_t stream = 0;
  int64_t launch_ts = INT64_MIN;      // start of the launching API call; INT64_MIN unknown
  int32_t launch_slice = model::kNone;
  WorkType type = WorkType::kCompute;
  bool queued = false;                // a kernel, copy or fill (what the idle split looks at)
};

// The GPU work of one device of one rank (or, in HTA mode, of a whole rank).
struct GpuGroup {
  int64_t rank = -1;
  int32_t device = model::kNone;  // kNone: every device of the rank
  std::string label;              // "rank 0 GPU 1"
  model::Column<GpuWork> work;    // sorted by (ts, slice); a column: spills past the memory budget
};

struct GpuWorkSet {
  std::vector<GpuGroup> groups;
  bool last_step_dropped = false;  // HTA mode only
  std::vector<uint64_t> steps_kept;
};
GpuWorkSet CollectGpuWork(const model::Trace& t, const AnalysisOptions& opt);

// Temporal breakdown over [first GPU start, last GPU end] of a group.
struct TimeBreakdown {
  int64_t span_ns = 0;   // last end - first start (HTA's "kernel time")
  int64_t busy_ns = 0;   // union of all work
  int64_t idle_ns = 0;   // span - busy
  int64_t compute_ns = 0;        // union of compute
  int64_t communication_ns = 0;  // communication not overlapped by compute
  int64_t memory_ns = 0;         // memory not overlapped by compute or communication
  int64_t other_ns = 0;          // the rest of busy (HTA mode: syncs)
  bool valid = false;            // span > 0
  double Pct(int64_t v) const { return valid ? 100.0 * static_cast<double>(v) / static_cast<double>(span_ns) : 0.0; }
  int64_t non_compute_ns() const { return span_ns - compute_ns - idle_ns; }  // HTA's non-compute
};
TimeBreakdown TemporalBreakdown(const GpuGroup& g);

// Gaps between consecutive kernels of each stream, by cause: the next kernel's
// launch came after the previous one ended (host wait), the gap is shorter than
// the threshold (kernel wait), or neither (other).
struct StreamIdle {
  int64_t stream = 0;
  uint64_t kernels = 0;
  int64_t host_wait_ns = 0, kernel_wait_ns = 0, other_ns = 0;
  int64_t total_ns() const { return SatAdd(SatAdd(host_wait_ns, kernel_wait_ns), other_ns); }
};
struct IdleBreakdown {
  std::vector<StreamIdle> streams;  // by stream id
  int64_t host_wait_ns = 0, kernel_wait_ns = 0, other_ns = 0;  // summed over streams
  int64_t total_ns() const { return SatAdd(SatAdd(host_wait_ns, kernel_wait_ns), other_ns); }
  double Pct(int64_t v) const {
    int64_t t = total_ns();
    return t > 0 ? 100.0 * static_cast<double>(v) / static_cast<double>(t) : 0.0;
  }
};
IdleBreakdown IdleTimeBreakdown(const GpuGroup& g, const AnalysisOptions& opt);

// Time in each overlap state of compute / communication / memory ("compute
// overlapping memory", ...), as HTA's kernel-type table.
struct OverlapState {
  std::string label;  // "COMPUTATION", "COMPUTATION overlapping MEMORY", ...
  int64_t ns = 0;
};
std::vector<OverlapState> KernelTypeTable(const GpuGroup& g);

// Per (type, name) statistics over compute, communication and memory work.
struct KernelStats {
  std::string name;
  WorkType type = WorkType::kCompute;
  uint64_t count = 0;
  int64_t total_ns = 0, min_ns = 0, max_ns = 0;
  double mean_ns = 0, std_ns = 0;  // std with ddof=1, 0 for one sample
};
// Sorted by total descending, then name.
std::vector<KernelStats> KernelNameTable(const model::Trace& t, const std::vector<const GpuGroup*>& groups);

// Summary of a time series, each point weighted once (pandas describe()).
struct SeriesSummary {
  std::string key;  // stream id, or copy kind
  uint64_t count = 0;
  double mean = 0, min = 0, p50 = 0, max = 0;
};
struct CounterPoint {
  int64_t ts;
  double value;
};
struct CounterSeriesOut {
  std::string key;
  std::vector<CounterPoint> points;
};
// Launched-but-not-started work per stream: +1 at each launch call, -1 when
// its work starts on the device.
std::vector<CounterSeriesOut> QueueLengthSeries(const model::Trace& t, const GpuGroup& g, const AnalysisOptions& opt);
// Achieved bandwidth of concurrent copies (GB/s) per copy kind: each copy adds
// bytes/duration while it runs.
std::vector<CounterSeriesOut> MemoryBandwidthSeries(const model::Trace& t, const GpuGroup& g, const AnalysisOptions& opt);
// HTA summarizes the memory-bandwidth series over its positive points only.
SeriesSummary Summarize(const CounterSeriesOut& s, bool positive_only);

}  // namespace strata::analysis
