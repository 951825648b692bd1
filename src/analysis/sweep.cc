#include "analysis/sweep.h"

#include <cmath>

namespace strata::analysis {

void SummarizeSweep(SweepSummary* s) {
  s->best = -1;
  s->saturation = -1;
  s->gain_pct.assign(s->points.size(), 0.0);
  double best = 0;
  for (size_t i = 0; i < s->points.size(); ++i) {
    const SweepPoint& p = s->points[i];
    if (!p.error.empty() || p.steps == 0) continue;
    if (p.throughput > best) {
      best = p.throughput;
      s->best = static_cast<int>(i);
    }
  }
  double prev = 0;
  for (size_t i = 0; i < s->points.size(); ++i) {
    const SweepPoint& p = s->points[i];
    if (!p.error.empty() || p.steps == 0) continue;
    if (prev > 0) s->gain_pct[i] = 100.0 * (p.throughput - prev) / prev;
    prev = p.throughput;
    // Saturation: the first point within 5% of the best throughput. Beyond it,
    // larger values buy latency, not throughput.
    if (s->saturation < 0 && best > 0 && p.throughput >= 0.95 * best) s->saturation = static_cast<int>(i);
  }
}

}  // namespace strata::analysis
