// Roofline analysis (Williams, Waterman & Patterson, CACM 2009; per layer and
// kernel as MLModelScope does): for each kernel, op and step, its arithmetic
// intensity (FLOPs per byte of memory traffic) against the device's ridge point
// (peak FLOP/s / memory bandwidth), whether it is compute- or memory-bound, and
// how close it came to the roof min(peak, intensity x bandwidth).
//
// Where the numbers come from, best first:
//  - FLOPs and bytes: a kernel's hardware counters when recorded (strata
//    --gpu-metrics: flops_f64/f32/f16 and dram_bytes args of the kernel slice);
//    else the estimate of the framework op that launched it (strata --shapes:
//    OpTable; torch.profiler traces: the op's "Input Dims"/"Input type"/"Concrete
//    Inputs" through the same cost model, src/opcost), shared among the op's
//    kernels by their durations. Estimates count each tensor read once and the
//    output written once: a lower bound of DRAM traffic, so estimated intensity
//    is an upper bound and "% of roof" of a memory-bound item a lower bound.
//  - Time: a GPU op's kernel time (the sum of its kernels' durations); a CPU
//    op's own duration (inclusive). Nested estimated ops (aten::linear ->
//    aten::addmm) count once, at the outermost estimated op.
//  - Peaks: the device's own figures when the trace has them (strata device
//    descriptions), else a table of known GPUs matched by name
//    (analysis/device_peaks.h); for ops on the CPU the host peaks measured by
//    `strata record` (manifest host.peak_flops_f32 / host.memory_bandwidth).
//  - Precision: each op's roof follows its first tensor's dtype when known —
//    fp16/bf16 on the fp16 tensor-core roof, fp32 on the fp32 (non-tensor)
//    roof, fp64 on the fp64 roof. fp32 matmuls that ran in TF32 therefore show
//    above 100% of their roof: the report says so rather than guessing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/trace.h"

namespace strata::analysis {

struct Roof {
  std::string name;        // "fp32", "tf32 tensor", "fp16/bf16 tensor", "fp64", "host fp32"
  double peak_flops = 0;   // FLOP/s
  double bandwidth = 0;    // bytes/s
  double ridge() const { return bandwidth > 0 ? peak_flops / bandwidth : 0; }
};

enum class RooflineLevel : uint8_t { kKernel, kOp, kStep };
const char* RooflineLevelName(RooflineLevel l);

struct RooflinePoint {
  std::string name;
  RooflineLevel level = RooflineLevel::kOp;
  uint64_t count = 0;        // instances aggregated (kernels / op calls / steps)
  double flops = 0;          // totals over the instances (steps: per step, mean)
  double bytes = 0;
  int64_t time_ns = 0;       // kernel/op time summed (steps: mean step duration)
  double intensity = 0;      // flops / bytes
  double flops_per_s = 0;    // flops / time
  double pct_of_roof = 0;    // flops_per_s / min(peak, intensity * bandwidth) * 100; 0 without peaks
  std::string bound;         // "compute", "memory", or "" without peaks
  int roof = -1;             // index into RooflineResult::roofs, -1 none
  bool measured = false;     // from hardware counters (else estimated)
};

// One outermost estimated op call (for the findings rules).
struct RooflineItem {
  int32_t slice = model::kNone;  // the op's slice
  int64_t ts = 0;                // the op's start (host clock)
  int64_t time_ns = 0;           // kernel time (GPU op) or duration (CPU op)
  double flops = 0, bytes = 0;
  int roof = -1;
  bool on_gpu = false;
};

struct RooflineOptions {
  size_t skip_steps = 1;  // warm-up steps left out of the step point when there are at least 3
};

struct RooflineResult {
  std::string device;        // "NVIDIA A100-SXM4-80GB", "host (Intel Xeon ...)", "" unknown
  std::string source;        // where the peaks came from: "trace", "table: A100 SXM4 80GB", "manifest", ""
  std::vector<Roof> roofs;   // the device's roofs; roofs[primary] is the headline one
  int primary = -1;          // the roof most of the estimated time ran against; -1 without peaks
  std::vector<RooflinePoint> kernels;  // by kernel name, most time first
  std::vector<RooflinePoint> ops;      // by op name (outermost estimated ops), most time first
  std::vector<RooflinePoint> steps;    // one point: the mean step (or the whole trace without steps)
  std::vector<RooflineItem> items;     // every outermost estimated op call with time > 0, in slice order
  // Coverage: share of kernel time (GPU traces) or op time (CPU) with FLOP/byte figures.
  double kernel_time_covered = 0;
  int64_t kernel_time_ns = 0;
  uint64_t ops_estimated = 0;          // op calls with an estimate (outermost)
  uint64_t kernels_measured = 0;       // kernels with hardware counters

  bool empty() const { return kernels.empty() && ops.empty(); }
  const Roof* RoofOf(int i) const { return i >= 0 && static_cast<size_t>(i) < roofs.size() ? &roofs[static_cast<size_t>(i)] : nullptr; }
};

RooflineResult Roofline(const model::Trace& t, const RooflineOptions& opt = {});

// The host's peaks `strata record` measured (the manifest's "host"): zeros and
// "" where absent (another tool's trace, an older recording).
struct RecordedHost {
  bool present = false;  // the manifest has a "host" object
  double peak_flops_f32 = 0;
  double memory_bandwidth = 0;  // bytes/s, all cores (STREAM triad)
  std::string cpu_model;
  int cpu_count = 0;  // online CPUs where it was recorded (0: not said)
};
RecordedHost RecordedHostPeaks(const model::Trace& t);

// Fills intensity, flops_per_s, pct_of_roof and bound of `p` from its flops,
// bytes and time against `roof` (may be null).
void ClassifyPoint(RooflinePoint& p, const Roof* roof);

}  // namespace strata::analysis
