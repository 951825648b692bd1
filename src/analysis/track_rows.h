// Finding one track's rows in the model's (track, ts)-sorted tables (thread
// states, system calls, CPU samples): two binary searches, then a scan of the
// rows that overlap a time range.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "base/intervals.h"
#include "model/trace.h"

namespace strata::analysis {

// Rows [first, last) of a (track, ts)-sorted table that belong to `track`.
template <typename Table>
std::pair<size_t, size_t> TrackRows(const Table& tb, uint32_t track) {
  auto r = std::equal_range(tb.track.begin(), tb.track.end(), track);
  return {static_cast<size_t>(r.first - tb.track.begin()), static_cast<size_t>(r.second - tb.track.begin())};
}

// Calls fn(row) for the rows in `r` (one track's, sorted by ts, not
// overlapping) whose [ts, ts+dur) may overlap [a, b): from the row that began
// last before `a` to the last that begins before `b`.
template <typename Table, typename Fn>
void RowsIn(const Table& tb, std::pair<size_t, size_t> r, int64_t a, int64_t b, Fn&& fn) {
  auto first = std::lower_bound(tb.ts.begin() + static_cast<ptrdiff_t>(r.first), tb.ts.begin() + static_cast<ptrdiff_t>(r.second), a);
  size_t i = static_cast<size_t>(first - tb.ts.begin());
  if (i > r.first) --i;  // the row that began before a may reach into it
  for (; i < r.second && tb.ts[i] < b; ++i) fn(i);
}

// Rows in `r` (a table without durations, such as CPU samples) whose ts is in [a, b).
template <typename Table>
std::pair<size_t, size_t> RowsAt(const Table& tb, std::pair<size_t, size_t> r, int64_t a, int64_t b) {
  auto lo = std::lower_bound(tb.ts.begin() + static_cast<ptrdiff_t>(r.first), tb.ts.begin() + static_cast<ptrdiff_t>(r.second), a);
  auto hi = std::lower_bound(lo, tb.ts.begin() + static_cast<ptrdiff_t>(r.second), b);
  return {static_cast<size_t>(lo - tb.ts.begin()), static_cast<size_t>(hi - tb.ts.begin())};
}

// Of one thread's rows `r` in the thread states, the time it was running
// within [a, b).
template <typename States>
int64_t RunningIn(const States& st, std::pair<size_t, size_t> r, int64_t a, int64_t b) {
  int64_t ns = 0;
  RowsIn(st, r, a, b, [&](size_t i) {
    if (st.state[i] == model::ThreadState::kRunning) ns += Overlap(st.ts[i], st.ts[i] + st.dur[i], a, b);
  });
  return ns;
}

}  // namespace strata::analysis
