// Levels of detail of a trace's timelines, stored in its index: what a
// timeline view draws at any zoom without reading a slice.
//
// Per track, level L merges the track's top-level slices whose gap is under
// kLodBaseGapNs * 4^L into one tile (its start and end, the slices it merged,
// the time they covered). A view of a range over P pixels asks for the
// coarsest level whose gap is under range / P: each tile then spans at least
// a pixel, so a query returns about P tiles per track however many slices the
// range holds, by two binary searches.
#pragma once

#include <cstdint>
#include <vector>

#include "model/columns.h"
#include "model/trace.h"

namespace strata::index {

inline constexpr int64_t kLodBaseGapNs = 1000;  // level 0: slices less than 1 us apart are one tile
inline constexpr int kLodLevels = 16;           // up to 1 us * 4^15, about 18 minutes

#define STRATA_LOD_TILE_COLUMNS(X)                                                               \
  X(int64_t, start)                                                                              \
  X(int64_t, end)                                                                                \
  X(uint32_t, count) /* top-level slices merged */                                               \
  X(int64_t, busy_ns) /* time they cover (their union) */

// Tiles of every (track, level), sorted by track, then level, then start;
// `offsets[track * kLodLevels + level]` .. `offsets[... + 1]` are that level's rows.
struct LodTable {
  STRATA_COLUMNS(STRATA_LOD_TILE_COLUMNS)
  std::vector<uint64_t> offsets;
  size_t size() const { return start.size(); }
};

LodTable BuildLod(const model::Trace& t);

struct LodTile {
  int64_t start, end;
  uint32_t count;
  int64_t busy_ns;
};
// The tiles of `track` that overlap [t0, t1) at the level for `pixels` pixels
// (at least one); `level` receives the level used.
std::vector<LodTile> QueryLod(const LodTable& lod, uint32_t track, int64_t t0, int64_t t1, int pixels,
                              int* level = nullptr);

}  // namespace strata::index
