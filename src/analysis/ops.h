// Framework ops (aten::mm, a TF op): how often they ran, their CPU time
// (inclusive and self), and the GPU time of the device work they launched,
// directly or through the ops they called (op -> launch call -> kernel by
// correlation): MLModelScope's "CPU and GPU latency per layer".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/options.h"
#include "model/trace.h"

namespace strata::analysis {

struct OpStats {
  std::string name;
  uint64_t count = 0;
  int64_t total_ns = 0;     // CPU, inclusive
  int64_t self_ns = 0;      // CPU, minus the slices nested in it on its thread
  int64_t max_ns = 0;
  int64_t gpu_ns = 0;       // device work launched by it or by ops it called
  int64_t gpu_self_ns = 0;  // device work whose innermost op it is
  uint64_t kernels = 0;     // device activities counted in gpu_ns
};
// Sorted by total CPU time, descending. A device activity counts once per op
// name even when ops of that name nest.
std::vector<OpStats> Ops(const model::Trace& t, const AnalysisOptions& opt);

}  // namespace strata::analysis
