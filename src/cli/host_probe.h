// The host's compute and memory peaks, for rooflines of CPU work: FP32 FMA
// throughput (all cores, widest vector ISA) and STREAM-triad bandwidth, measured
// once per machine in ~0.2 s and cached in ~/.cache/strata.
#pragma once

#include <string>

namespace strata::cli {

struct HostPeaks {
  double flops_f32 = 0;         // FLOP/s, all cores
  double memory_bandwidth = 0;  // bytes/s, all cores
  std::string isa;              // avx512, avx2, sse
  bool cached = false;
};

HostPeaks ProbeHost(const std::string& cpu_model, unsigned cpus);

}  // namespace strata::cli
