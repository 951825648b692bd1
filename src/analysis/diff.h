// Before/after comparison of two traces: how the step time changed and which
// ops, kernels and phases explain it.
//
// The primary attribution uses each step's critical path: its items sum to the
// step's duration, so the per-item changes of mean time-on-path sum to the
// change of the mean step time, and the ranking says what moved the step. A
// second view compares self time per step (all threads), which also shows work
// that changed off the critical path. A third view rolls the path time up into
// the innermost module or span each piece ran in, so that a change spread over
// many small ops of one scope reads as that scope's change.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/trace.h"

namespace strata::analysis {

struct DiffItem {
  std::string name;
  std::string kind;
  double a_ns = 0;       // per step in A
  double b_ns = 0;       // per step in B
  double delta_ns = 0;   // b - a
  double share_of_change = 0;  // delta / step delta (signed; sums to ~1 over items)
};

struct TraceDiff {
  uint64_t a_steps = 0, b_steps = 0;
  double a_step_ns = 0, b_step_ns = 0;  // mean step time (warm-up steps skipped)
  double step_delta_ns = 0;
  double step_delta_pct = 0;
  bool used_steps = true;               // false: whole traces compared (no steps recorded)
  std::vector<DiffItem> critical_path;  // ranked by |delta|
  std::vector<DiffItem> self_time;      // ranked by |delta|
  // The critical-path time again, with what ran inside a module or span
  // (innermost) rolled up into that scope: also sums to the step change.
  std::vector<DiffItem> scopes;         // ranked by |delta|
  double top3_path_explained = 0;       // share of the step change explained by the top 3 path items
  double top3_scopes_explained = 0;     // ... by the top 3 scope items
  double top3_explained = 0;            // the larger of the two
};

struct DiffOptions {
  size_t skip_steps = 1;   // warm-up steps left out when a trace has at least 3
  size_t max_steps = 64;
};

TraceDiff Diff(const model::Trace& a, const model::Trace& b, const DiffOptions& opt = {});

}  // namespace strata::analysis
