// The control block: a recording's run-time switches, shared by the supervisor
// and every traced process.
//
// `strata record` writes <trace dir>/control before it starts the program; each
// traced process maps it MAP_SHARED (recorder::Control()) and its collectors read
// the fields with relaxed loads, so a supervisor (today the initial options; later
// `strata record --serve` and POST /api/v1/trace) can switch a tier on or off
// while the program runs. A writer changes fields, then bumps `generation` with a
// release store; a reader that sees a new generation (relaxed poll, then an
// acquire load) re-reads the fields. Fields only grow at the end; `size` says how
// many bytes the writer knew about.
//
//   offset  field
//   0       magic 'STCB', version, size, generation
//   16      ops_mode, detail, sample_window_ms, sample_period_ms
//   32      detail_first_step, detail_last_step (int64)
//   48      batch_size (int64), memory, modules
//   64      gpu_metrics, paused
//
// `strata control TRACE` (cli/control_cmd.cc) changes these fields while the
// program runs, in the vocabulary of tiers (ControlTier below).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace strata::format {

inline constexpr uint32_t kControlMagic = 0x42435453u;  // "STCB"
inline constexpr uint32_t kControlVersion = 1;
inline constexpr const char* kControlFileName = "control";

// How framework ops are recorded.
enum class OpsMode : uint32_t {
  kOff = 0,      // steps, record_function scopes and memory only
  kSampled = 1,  // every op, but only in short windows spread over the run (a statistical profile)
  kAll = 2,      // every op
};
const char* OpsModeName(OpsMode m);
bool ParseOpsMode(std::string_view s, OpsMode* out);

struct ControlBlock {
  uint32_t magic;
  uint32_t version;
  uint32_t size;
  std::atomic<uint32_t> generation;
  std::atomic<uint32_t> ops_mode;          // OpsMode
  std::atomic<uint32_t> detail;            // 1: shapes, dtypes, FLOP/byte estimates, tensor ids for every op
  std::atomic<uint32_t> sample_window_ms;  // kSampled: length of one window of recorded ops
  std::atomic<uint32_t> sample_period_ms;  // kSampled: mean time between window starts
  std::atomic<int64_t> detail_first_step;  // the detail tier for steps [first, last]; -1: no window
  std::atomic<int64_t> detail_last_step;
  std::atomic<int64_t> batch_size;         // samples per step given by the user; 0: unknown
  std::atomic<uint32_t> memory;            // 1: allocator events
  std::atomic<uint32_t> modules;           // 1: module scopes
  std::atomic<uint32_t> gpu_metrics;       // 1: per-kernel hardware metrics (kernel replay: expensive)
  std::atomic<uint32_t> paused;            // 1: record nothing new (events are skipped, not lost)
};
static_assert(sizeof(ControlBlock) == 72, "the layout above is the file format");
static_assert(std::atomic<uint32_t>::is_always_lock_free && std::atomic<int64_t>::is_always_lock_free,
              "shared-memory atomics must be lock-free (address-free)");

// The switches as tiers, the vocabulary of `strata control --tiers`.
enum ControlTier : uint32_t {
  kTierOps = 1u << 0,         // framework op begin/end for every op (ops_mode all)
  kTierOpsSampled = 1u << 1,  // statistical op profile only (ops_mode sampled)
  kTierShapes = 1u << 2,      // op input shapes, dtypes, FLOP/byte estimates (detail)
  kTierMemory = 1u << 3,      // allocator events
  kTierGpuMetrics = 1u << 4,  // per-kernel hardware metrics
  kTierPaused = 1u << 31,     // record nothing
};
uint32_t GetTiers(const ControlBlock& cb);
// Stores the fields for `tiers` (relaxed); the caller publishes with `generation`.
void SetTiers(ControlBlock* cb, uint32_t tiers);

// True if the detail tier applies to `step`: no window is set, or the step is in it.
inline bool InDetailWindow(const ControlBlock& c, int64_t step) {
  int64_t first = c.detail_first_step.load(std::memory_order_relaxed);
  return first < 0 || (step >= first && step <= c.detail_last_step.load(std::memory_order_relaxed));
}

// Default switches: every op, no detail, memory and modules on.
void InitControlBlock(ControlBlock* cb);

// Writes a control file holding `cb` (the supervisor, before the program starts).
Status WriteControlFile(const std::string& path, const ControlBlock& cb);

// Maps a control file read-write and shared; nullptr with a status if it is
// missing, short or of another version. The mapping is never unmapped.
StatusOr<ControlBlock*> MapControlFile(const std::string& path);

}  // namespace strata::format
