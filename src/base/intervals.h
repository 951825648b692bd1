// Time intervals [begin, end) as (begin, end) pairs: merging those that touch or
// overlap, and measuring how much of a range a merged list covers. Several
// analyses ask "how long was the device (or a thread) busy in this step": they
// merge once, then ask per step with a binary search.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <utility>
#include <vector>

namespace strata {

using Intervals = std::vector<std::pair<int64_t, int64_t>>;

// How long [a0, a1) and [b0, b1) overlap (0 when they do not).
inline int64_t Overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
  return std::max<int64_t>(0, std::min(a1, b1) - std::max(a0, b0));
}

// Appends `sorted` (by begin) to `out` with touching or overlapping intervals
// merged. `Out` is any container with empty(), back() and push_back() (a
// vector, or a model::Column that spills to disk).
template <class In, class Out>
void AppendMerged(const In& sorted, Out& out) {
  for (const auto& iv : sorted) {
    if (!out.empty() && iv.first <= out.back().second) out.back().second = std::max(out.back().second, iv.second);
    else out.push_back(iv);
  }
}

// Sorts `v` and merges, in place, the intervals that touch or overlap.
inline void SortAndMerge(Intervals& v) {
  std::sort(v.begin(), v.end());
  size_t n = 0;
  for (auto [a, b] : v) {
    if (n > 0 && a <= v[n - 1].second) v[n - 1].second = std::max(v[n - 1].second, b);
    else v[n++] = {a, b};
  }
  v.resize(n);
}

// How much of [a, b) the merged, sorted intervals `m` cover.
template <class M>
int64_t OverlapWith(const M& m, int64_t a, int64_t b) {
  auto it = std::upper_bound(m.begin(), m.end(), std::make_pair(a, INT64_MAX));
  if (it != m.begin()) it = std::prev(it);
  int64_t sum = 0;
  for (; it != m.end() && it->first < b; ++it) sum += Overlap(it->first, it->second, a, b);
  return sum;
}

}  // namespace strata
