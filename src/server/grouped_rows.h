// Rows of a trace's tables grouped for the viewer's range queries
// (server/api.cc): by a key, each group in time order, built on first use;
// and, for counters, summaries of blocks of points at several sizes, so that
// a counter lane over a range of 100M points is answered from a few thousand
// blocks rather than every point.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace strata::server {

// Rows of a table grouped by a key (a counter's series, a thread state's
// track), each group's in time order; built once, on first use.
struct GroupedRows {
  using It = std::vector<uint32_t>::const_iterator;
  std::once_flag once;
  std::vector<uint32_t> rows;  // group k's: rows[offsets[k] .. offsets[k + 1])
  std::vector<size_t> offsets;

  template <class Key, class Ts>
  const GroupedRows& Build(const Key& key, const Ts& ts, size_t groups) {
    std::call_once(once, [&] {
      const size_t n = ts.size();
      offsets.assign(groups + 1, 0);
      for (size_t i = 0; i < n; ++i)
        if (key[i] < groups) ++offsets[key[i] + 1];
      for (size_t k = 0; k < groups; ++k) offsets[k + 1] += offsets[k];
      rows.resize(offsets[groups]);
      std::vector<size_t> next(offsets.begin(), offsets.end() - 1);
      for (size_t i = 0; i < n; ++i)
        if (key[i] < groups) rows[next[key[i]]++] = static_cast<uint32_t>(i);
      for (size_t k = 0; k < groups; ++k) {
        auto from = rows.begin() + static_cast<std::ptrdiff_t>(offsets[k]);
        auto to = rows.begin() + static_cast<std::ptrdiff_t>(offsets[k + 1]);
        auto by_time = [&](uint32_t x, uint32_t y) { return ts[x] < ts[y]; };
        // Recorded series come in time order: one pass says so, and the sort is skipped.
        if (!std::is_sorted(from, to, by_time)) std::stable_sort(from, to, by_time);
      }
    });
    return *this;
  }
  size_t Count(size_t k) const { return offsets[k + 1] - offsets[k]; }
  // Group k's first row, its first row whose time is not before `t`, its end.
  template <class Ts>
  std::array<It, 3> Find(size_t k, const Ts& ts, int64_t t) const {
    It first = rows.begin() + static_cast<std::ptrdiff_t>(offsets[k]);
    It last = rows.begin() + static_cast<std::ptrdiff_t>(offsets[k + 1]);
    It at = std::lower_bound(first, last, t, [&](uint32_t r, int64_t v) { return ts[r] < v; });
    return {first, at, last};
  }
};

// A thread's intervals (group `key` of `g`; they do not overlap) over
// [start, end) at `per` ns a pixel, clipped to the range: `wide(row, a, b)`
// for each interval of a pixel or more, `pool(row, a, b)` for each shorter
// one, then `flush(pixel)` once a pixel's pooled intervals are all seen.
// The first interval that ends after `start` is at most one before the
// first that starts at or after it.
template <class Ts, class Durs, class Wide, class Pool, class Flush>
void WalkIntervals(const GroupedRows& g, size_t key, const Ts& ts, const Durs& dur, int64_t start, int64_t end,
                   double per, Wide&& wide, Pool&& pool, Flush&& flush) {
  auto found = g.Find(key, ts, start);
  auto first = found[0], it = found[1], last = found[2];
  if (it != first && ts[*(it - 1)] + dur[*(it - 1)] > start) --it;
  int64_t pixel = -1;
  for (; it != last && ts[*it] < end; ++it) {
    int64_t a = std::max(start, ts[*it]), b = std::min(end, ts[*it] + std::max<int64_t>(0, dur[*it]));
    if (static_cast<double>(b - a) >= per) {
      if (pixel >= 0) flush(pixel);
      pixel = -1;
      wide(*it, a, b);
      continue;
    }
    int64_t k = static_cast<int64_t>(static_cast<double>(a - start) / per);
    if (k != pixel && pixel >= 0) flush(pixel);
    pixel = k;
    pool(*it, a, b);
  }
  if (pixel >= 0) flush(pixel);
}

// Summaries of a counter series' points (in GroupedRows order) in blocks of
// 64, 4,096, 262,144 ... points, aligned from the start of each group: the
// first and last time, the lowest, highest and last value of each block.
// Built once, on the first counter query (a pass over the points per level).
struct CounterLod {
  static constexpr size_t kFanout = 64;
  struct Level {
    size_t size = 0;             // points per block
    std::vector<size_t> base;    // per group: its first block's index
    std::vector<int64_t> t0, t1;
    std::vector<double> lo, hi, last;
  };
  std::once_flag once;
  std::vector<Level> levels;

  template <class Ts, class Values>
  const CounterLod& Build(const GroupedRows& g, const Ts& ts, const Values& value) {
    std::call_once(once, [&] {
      const size_t groups = g.offsets.size() - 1;
      size_t largest = 0;
      for (size_t k = 0; k < groups; ++k) largest = std::max(largest, g.Count(k));
      for (size_t size = kFanout; size <= largest; size *= kFanout) {
        Level l;
        l.size = size;
        l.base.resize(groups + 1);
        for (size_t k = 0; k < groups; ++k) l.base[k + 1] = l.base[k] + (g.Count(k) + size - 1) / size;
        const size_t blocks = l.base[groups];
        l.t0.resize(blocks), l.t1.resize(blocks), l.lo.resize(blocks), l.hi.resize(blocks), l.last.resize(blocks);
        const Level* below = levels.empty() ? nullptr : &levels.back();
        for (size_t k = 0; k < groups; ++k) {
          const size_t n = g.Count(k);
          for (size_t j = 0; j * size < n; ++j) {
            const size_t b = l.base[k] + j;
            const size_t from = j * size, to = std::min(n, from + size);
            if (!below) {
              const uint32_t* r = g.rows.data() + g.offsets[k];
              l.t0[b] = ts[r[from]], l.t1[b] = ts[r[to - 1]];
              double lo = value[r[from]], hi = lo;
              for (size_t p = from; p < to; ++p) lo = std::min(lo, double(value[r[p]])), hi = std::max(hi, double(value[r[p]]));
              l.lo[b] = lo, l.hi[b] = hi, l.last[b] = value[r[to - 1]];
            } else {
              const size_t s0 = below->base[k] + from / below->size, s1 = below->base[k] + (to - 1) / below->size;
              l.t0[b] = below->t0[s0], l.t1[b] = below->t1[s1], l.last[b] = below->last[s1];
              double lo = below->lo[s0], hi = below->hi[s0];
              for (size_t q = s0; q <= s1; ++q) lo = std::min(lo, below->lo[q]), hi = std::max(hi, below->hi[q]);
              l.lo[b] = lo, l.hi[b] = hi;
            }
          }
        }
        levels.push_back(std::move(l));
      }
    });
    return *this;
  }
};

}  // namespace strata::server
