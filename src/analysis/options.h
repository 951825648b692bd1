// Options shared by the analyses.
#pragma once

#include <cstdint>

namespace strata::analysis {

struct AnalysisOptions {
  // Reproduce HTA 0.5.0 (HolisticTraceAnalysis) instead of strata's own
  // definitions, for comparing numbers with it (docs/hta-compat.md):
  //   - times in whole microseconds: when the source wrote fractional
  //     microseconds, starts round up and ends round down (so events shorter
  //     than 1 us can get negative durations);
  //   - with two or more ProfilerStep#N, the last step is dropped, with every
  //     device activity whose launch is not before its start;
  //   - GPU work is every event that carries a stream number: synchronization
  //     records and host ops with a "stream" argument included, classified by
  //     HTA's name patterns ("Sync" or "Memcpy" anywhere in a kernel name makes
  //     it "other");
  //   - all devices of a rank are pooled into one timeline.
  // strata's own mode keeps every step and event at full resolution, counts
  // kernels, copies and fills as GPU work (classified by kind), and reports each
  // device on its own.
  bool hta_compat = false;
  // Idle gaps between consecutive kernels on a stream shorter than this, and
  // not waiting for the host, are "kernel wait" (HTA's consecutive_kernel_delay).
  int64_t kernel_wait_threshold_ns = 30000;
  // Samples (or tokens) per step, for throughput; 0 when unknown.
  double batch_size = 0;
  // Launch statistics: API calls longer than this are "slow launches", and a
  // kernel shorter than its launch call (that is no slower than this) is "short".
  int64_t launch_cpu_cutoff_ns = 50000;
  // Kernels that start later than this after their launch call returned are "late starts".
  int64_t launch_delay_cutoff_ns = 100000;
};

}  // namespace strata::analysis
