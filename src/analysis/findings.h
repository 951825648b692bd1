// Diagnosis: rules that turn the analyses into findings — what slows the step
// down, the evidence (numbers, and the steps/ops/kernels involved), an estimate
// of the step time a fix would save, and a concrete suggestion.
//
// Each rule looks at one cause and fires only with evidence for it. Estimates
// are computed the same way throughout: the time the cause adds to the measured
// steps (on the critical path where that matters), as a share of step time,
// after what a fix cannot remove (e.g. loading overlapped with compute can only
// hide up to the compute time). Findings are sorted by that estimate.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analysis/critical_path.h"
#include "analysis/options.h"
#include "model/trace.h"

namespace strata::analysis {

// The categories of findings (the words used in JSON).
inline constexpr const char* kFindingCategories[] = {
    "input_pipeline", "dispatch_overhead", "host_sync",   "memory_allocation", "memcpy",
    "io_syscalls",    "cpu_contention",    "communication",     "straggler",
    "placement",      "compute_bound",     "memory_bound", "unoptimized_library", "host_bound"};

struct Finding {
  std::string category;   // one of kFindingCategories
  std::string title;      // one line: what is wrong, with its size
  std::string evidence;   // the numbers behind it, in words
  std::vector<std::pair<std::string, double>> metrics;  // the same numbers, for machines
  std::vector<std::string> involved;  // the ops, kernels, syscalls, threads concerned
  // Where in the program to apply the fix: "file:line (function)" and how
  // often per step, most frequent first (the Python call sites recorded).
  std::vector<std::string> where;
  double estimated_gain_pct = 0;      // of the mean step time, if the suggestion is applied
  // How the gain was estimated: the change applied to the measured steps (the
  // fix as a what-if: "the 128 MiB of pageable copies per step at 50 GB/s") and
  // the step it predicts. Empty step_after_ns: a share, not a replayed step.
  std::string what_if;
  double step_ns = 0, step_after_ns = 0;
  std::string suggestion;
};

struct DiagnosisOptions {
  AnalysisOptions analysis;
  size_t skip_steps = 1;          // warm-up steps left out when there are at least 3
  double min_gain_pct = 2.0;      // findings below this are not reported
  // Steps whose critical paths are walked and replayed for the what-ifs (evenly
  // spread; sums over them are scaled to all the steps). critical_path.h.
  size_t max_walked_steps = kMaxWalkedSteps;
};

// How well the what-if replay (analysis/replay.h) reproduces the measured
// steps with no fix applied: what every finding's gain is relative to.
struct ReplayCheck {
  size_t steps = 0;
  double measured_ns = 0, replayed_ns = 0;  // mean step
  double error_pct = 0;                     // mean |replayed - measured| / measured per step
};

std::vector<Finding> Diagnose(const model::Trace& t, const DiagnosisOptions& opt = {}, ReplayCheck* check = nullptr);

}  // namespace strata::analysis
