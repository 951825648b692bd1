// Throughput and latency across a swept parameter (MLModelScope's "throughput
// across batch sizes"): where does throughput stop growing?
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::analysis {

struct SweepPoint {
  std::string value;          // the parameter's value as given
  double numeric = 0;         // parsed value (the x axis), NaN if not a number
  uint64_t steps = 0;         // steps measured (after skipping warm-up)
  int64_t step_p50_ns = 0;    // latency of one step (one batch)
  int64_t step_p90_ns = 0;
  double samples_per_step = 0;   // 0 when unknown
  double throughput = 0;         // samples/s (or steps/s when samples are unknown)
  int exit_status = 0;
  std::string error;             // why this point has no figures
};

struct SweepSummary {
  std::string param;
  std::string throughput_unit;   // "samples/s" or "steps/s"
  std::vector<SweepPoint> points;  // in the order run
  int best = -1;                 // index of the highest throughput
  int saturation = -1;           // first point reaching 95% of the best throughput
  // Marginal gain of each point over the previous one, in % (first is 0).
  std::vector<double> gain_pct;
};

// Fills best, saturation and gain_pct from points (points with errors are skipped).
void SummarizeSweep(SweepSummary* s);

}  // namespace strata::analysis
