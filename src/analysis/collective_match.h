// The same collective on every rank: a process's n-th work of one name is
// every other process's n-th work of that name. Ranks issue their collectives
// in one order, but a backend with several worker threads (gloo has two) may
// begin two works enqueued back to back in either order, so sequence numbers
// alone can swap neighbours between ranks; sizes are no key either (torch
// 2.x's gloo works come without their input tensors at times, on some ranks
// and not others).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "model/trace.h"

namespace strata::analysis {

// Instance g is the rows rows[starts[g]] .. rows[starts[g + 1] - 1] (one per
// process that ran it, ascending process), instances ordered by (name,
// occurrence).
struct CollectiveInstances {
  std::vector<size_t> rows;
  std::vector<size_t> starts;  // size() + 1 entries
  size_t size() const { return starts.empty() ? 0 : starts.size() - 1; }
  size_t begin_of(size_t g) const { return starts[g]; }
  size_t end_of(size_t g) const { return starts[g + 1]; }
};

CollectiveInstances MatchCollectives(const model::CollectiveTable& c);

// The same collective on every rank by time, for ranks on one time base whose
// traces hold different subsets of the job's collectives (sampled windows,
// filtered traces: HTA's trace_filter), where occurrences do not correspond:
// rows of one name whose intervals all overlap (every rank inside it at one
// moment, as a synchronizing collective has them), one per process, taken in
// begin order. Instances ordered by (name, first begin).
CollectiveInstances MatchCollectivesByTime(const model::CollectiveTable& c);

// Of the synchronizing instances entered by all `processes`, how many had
// their ranks never all inside at once: the last begin after the first end
// by more than `tolerance_ns` (occurrences matched wrongly, or clocks apart).
struct MatchCheck {
  size_t checked = 0;
  size_t apart = 0;
};
MatchCheck CheckInstances(const CollectiveInstances& inst, const model::CollectiveTable& c,
                          const model::StringPool& names, size_t processes, int64_t tolerance_ns);

// Whether every participant's completion needs every participant to have
// begun (all-reduce, all-gather, reduce-scatter, all-to-all, barrier): the
// collectives whose ends bound every rank's clock against every other's.
// Broadcasts, reductions to one root, scatters and point-to-point works are not.
bool IsSynchronizingCollective(std::string_view name);

// A point-to-point work (send, recv): numbered in the same sequence as the
// collectives, but different on the two sides of each exchange.
bool IsPointToPoint(std::string_view name);

}  // namespace strata::analysis
