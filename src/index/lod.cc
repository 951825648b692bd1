#include "index/lod.h"

#include <algorithm>

namespace strata::index {
namespace {

struct Tile {
  int64_t start, end;
  uint32_t count;
  int64_t busy;
};

void Append(LodTable& lod, const std::vector<Tile>& tiles) {
  for (const Tile& x : tiles) {
    lod.start.push_back(x.start);
    lod.end.push_back(x.end);
    lod.count.push_back(x.count);
    lod.busy_ns.push_back(x.busy);
  }
}

}  // namespace

LodTable BuildLod(const model::Trace& t) {
  LodTable lod;
  const auto& s = t.slices;
  size_t tracks = t.tracks.size();
  lod.offsets.reserve(tracks * kLodLevels + 1);
  std::vector<Tile> cur, next;
  for (size_t trk = 0; trk < tracks; ++trk) {
    // Level 0 from the top-level slices (sorted by start on their track):
    // overlapping ones and those under the gap apart join, their union counted.
    cur.clear();
    if (trk < t.track_slices.size()) {
      auto [a, b] = t.track_slices[trk];
      const int64_t gap = kLodBaseGapNs;
      for (size_t i = a; i < b; ++i) {
        if (s.depth[i] != 0) continue;
        int64_t st = s.ts[i], en = std::max(s.ts[i], s.end(i));
        if (!cur.empty() && st < cur.back().end + gap) {
          Tile& x = cur.back();
          if (en > x.end) x.busy += en - std::max(st, x.end);
          x.end = std::max(x.end, en);
          ++x.count;
        } else {
          cur.push_back({st, en, 1, en - st});
        }
      }
    }
    for (int level = 0; level < kLodLevels; ++level) {
      if (level > 0) {
        // Tiles of the level below are disjoint: merging adds their counts and busy times.
        const int64_t gap = kLodBaseGapNs << (2 * level);
        next.clear();
        for (const Tile& x : cur) {
          if (!next.empty() && x.start < next.back().end + gap) {
            Tile& y = next.back();
            y.end = std::max(y.end, x.end);
            y.count += x.count;
            y.busy += x.busy;
          } else {
            next.push_back(x);
          }
        }
        cur.swap(next);
      }
      lod.offsets.push_back(lod.start.size());
      Append(lod, cur);
    }
  }
  lod.offsets.push_back(lod.start.size());
  return lod;
}

std::vector<LodTile> QueryLod(const LodTable& lod, uint32_t track, int64_t t0, int64_t t1, int pixels, int* level) {
  std::vector<LodTile> out;
  if (pixels < 1) pixels = 1;
  int64_t per_pixel = std::max<int64_t>(1, (t1 - t0) / pixels);
  int l = 0;
  while (l + 1 < kLodLevels && (kLodBaseGapNs << (2 * (l + 1))) <= per_pixel) ++l;
  if (level) *level = l;
  size_t slot = static_cast<size_t>(track) * kLodLevels + static_cast<size_t>(l);
  if (slot + 1 >= lod.offsets.size() || t1 <= t0) return out;
  auto first = lod.start.begin() + static_cast<std::ptrdiff_t>(lod.offsets[slot]);
  auto last = lod.start.begin() + static_cast<std::ptrdiff_t>(lod.offsets[slot + 1]);
  // The first tile ending after t0: tiles are disjoint and sorted, so their
  // ends are sorted too.
  auto ends_first = lod.end.begin() + (first - lod.start.begin());
  auto ends_last = lod.end.begin() + (last - lod.start.begin());
  size_t i = static_cast<size_t>(std::upper_bound(ends_first, ends_last, t0) - lod.end.begin());
  size_t j = static_cast<size_t>(std::lower_bound(first, last, t1) - lod.start.begin());
  for (; i < j; ++i) out.push_back({lod.start[i], lod.end[i], lod.count[i], lod.busy_ns[i]});
  return out;
}

}  // namespace strata::index
