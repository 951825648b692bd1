// The trace directory's control block: how the supervisor (`strata record`, and
// later `strata record --serve` and its web UI) switches recording tiers of
// running programs without restarting them.
//
// `<trace>/control` is one page, mapped shared by the supervisor (read-write)
// and by every traced process (read-only). Traced processes read fields with
// relaxed loads on their slow paths (e.g. when a step begins), never per event.
// Writers update the fields, then bump `generation` (release), so a reader that
// sees a new generation (acquire) sees the fields written before it.
//
// ABI: fields only grow at the end; `size` says how many bytes a writer knew.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace strata::format {

inline constexpr uint32_t kControlMagic = 0x43525453;  // "STRC"
inline constexpr uint16_t kControlVersion = 1;
inline constexpr size_t kControlFileSize = 4096;

// Tier bits in ControlBlock::tiers.
enum ControlTier : uint32_t {
  kTierOps = 1u << 0,         // framework op begin/end for every op
  kTierOpsSampled = 1u << 1,  // statistical op profile only
  kTierShapes = 1u << 2,      // op input shapes, dtypes, FLOP/byte estimates
  kTierMemory = 1u << 3,      // allocator events
  kTierGpuMetrics = 1u << 4,  // per-kernel hardware metrics (replay: expensive)
  kTierPaused = 1u << 31,     // record nothing (events are skipped, not lost)
};

struct ControlBlock {
  uint32_t magic;
  uint16_t version;
  uint16_t size;
  std::atomic<uint32_t> generation;
  std::atomic<uint32_t> tiers;
  // The detailed tiers (shapes, GPU metrics) apply to steps in [first, last];
  // outside the window only the base tiers record. UINT64_MAX/0 = always.
  std::atomic<uint64_t> detail_first_step;
  std::atomic<uint64_t> detail_last_step;
};
static_assert(sizeof(ControlBlock) == 32, "the control block's layout is an ABI");
static_assert(std::atomic<uint32_t>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free,
              "shared-memory atomics must be lock-free");

// True if `step` is inside the detail window.
inline bool InDetailWindow(const ControlBlock& c, uint64_t step) {
  return step >= c.detail_first_step.load(std::memory_order_relaxed) &&
         step <= c.detail_last_step.load(std::memory_order_relaxed);
}

}  // namespace strata::format
