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
//   72      current_step (int64), written by the traced processes
//   80      window_tiers, cuda_activity, cuda_sample_every, reserved
//   96      live_steps_written (uint64), then kLiveSteps LiveStep entries
//
// `strata control TRACE` (cli/control_cmd.cc) changes these fields while the
// program runs, in the vocabulary of tiers (ControlTier below). The traced
// processes write back: the step they are in (`current_step`, so that a window
// can be asked for "the next N steps") and every finished step (the live-step
// ring, read by `strata record --serve` to show steps as they finish).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace strata::format {

inline constexpr uint32_t kControlMagic = 0x42435453u;  // "STCB"
inline constexpr uint32_t kControlVersion = 2;
inline constexpr const char* kControlFileName = "control";

// How framework ops are recorded.
enum class OpsMode : uint32_t {
  kOff = 0,      // steps, record_function scopes and memory only
  kSampled = 1,  // every op, but only in short windows spread over the run (a statistical profile)
  kAll = 2,      // every op
};
const char* OpsModeName(OpsMode m);
bool ParseOpsMode(std::string_view s, OpsMode* out);

// How CUDA device activity (CUPTI's activity records: kernels, copies) is
// recorded; API calls are recorded whatever this says.
enum class CudaActivity : uint32_t {
  kAll = 0,      // every step (CUPTI's activity API on for the whole run)
  kSampled = 1,  // one step in `cuda_sample_every`, plus any step window asking for cuda
  kWindow = 2,   // only in step windows asking for cuda (strata control --detail cuda)
  kOff = 3,
};
inline const char* CudaActivityName(CudaActivity m) {
  switch (m) {
    case CudaActivity::kAll: return "all";
    case CudaActivity::kSampled: return "sampled";
    case CudaActivity::kWindow: return "window";
    case CudaActivity::kOff: return "off";
  }
  return "?";
}
bool ParseCudaActivity(std::string_view s, CudaActivity* out);

// One finished step in the live-step ring. A writer claims slot
// i % kLiveSteps by incrementing live_steps_written, fills the fields, then
// stores seq = i + 1 (release); a reader takes an entry whose seq is i + 1
// before and after it copies the fields (a later writer may reuse the slot).
struct LiveStep {
  std::atomic<uint64_t> seq;
  std::atomic<int64_t> step;
  std::atomic<uint64_t> begin_ns;  // trace clock
  std::atomic<uint64_t> end_ns;
  std::atomic<uint32_t> pid;
  std::atomic<uint32_t> tiers;     // ControlTier bits in force for the step (kTierCuda: device activity recorded)
  std::atomic<uint32_t> optimizer; // which optimizer's step ended it, + 1 (0: not an optimizer step)
  uint32_t reserved;
};
inline constexpr size_t kLiveSteps = 1024;

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
  std::atomic<int64_t> current_step;       // the step last begun in a traced process; -1: none yet
  // The tiers the step window [detail_first_step, detail_last_step] turns on
  // (ControlTier bits); 0 means shapes (the detail tier), as before this field.
  std::atomic<uint32_t> window_tiers;
  std::atomic<uint32_t> cuda_activity;     // CudaActivity
  std::atomic<uint32_t> cuda_sample_every; // kSampled: one step in this many (>= 1)
  uint32_t reserved;
  std::atomic<uint64_t> live_steps_written;
  LiveStep live_steps[kLiveSteps];
};
static_assert(offsetof(ControlBlock, current_step) == 72 && offsetof(ControlBlock, live_steps) == 104,
              "the layout above is the file format");
static_assert(sizeof(LiveStep) == 48);
static_assert(std::atomic<uint32_t>::is_always_lock_free && std::atomic<int64_t>::is_always_lock_free,
              "shared-memory atomics must be lock-free (address-free)");

// The switches as tiers, the vocabulary of `strata control --tiers`.
enum ControlTier : uint32_t {
  kTierOps = 1u << 0,         // framework op begin/end for every op (ops_mode all)
  kTierOpsSampled = 1u << 1,  // statistical op profile only (ops_mode sampled)
  kTierShapes = 1u << 2,      // op input shapes, dtypes, FLOP/byte estimates (detail)
  kTierMemory = 1u << 3,      // allocator events
  kTierGpuMetrics = 1u << 4,  // per-kernel hardware metrics
  kTierCuda = 1u << 5,        // CUDA device activity (CUPTI activity records) in a step window
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
// True if a step window is set and `step` is in it.
inline bool InStepWindow(const ControlBlock& c, int64_t step) {
  int64_t first = c.detail_first_step.load(std::memory_order_relaxed);
  return first >= 0 && step >= first && step <= c.detail_last_step.load(std::memory_order_relaxed);
}
// The tiers the step window turns on (kTierShapes when unset).
inline uint32_t WindowTiers(const ControlBlock& c) {
  uint32_t t = c.window_tiers.load(std::memory_order_relaxed);
  return t ? t : kTierShapes;
}
// True if CUDA device activity is wanted for `step` (-1: outside any step).
// (Inline, like the helpers above: collectors outside libstrata use them.)
inline bool CudaActivityWanted(const ControlBlock& c, int64_t step) {
  if (c.paused.load(std::memory_order_relaxed)) return false;
  auto mode = static_cast<CudaActivity>(c.cuda_activity.load(std::memory_order_relaxed));
  if (mode == CudaActivity::kAll) return true;
  if (mode == CudaActivity::kOff) return false;
  if (step >= 0 && InStepWindow(c, step) && (WindowTiers(c) & kTierCuda)) return true;
  if (mode != CudaActivity::kSampled || step < 0) return false;
  uint32_t every = c.cuda_sample_every.load(std::memory_order_relaxed);
  if (every == 0) every = 1;
  // Not step 0: the first steps (warm-up, autotuning) are not typical.
  return step % every == every / 2;
}

// The traced process's side: the step it begins (current_step) and each step
// it finishes (the live-step ring).
void PublishStepBegin(ControlBlock* cb, int64_t step);
void PublishStepEnd(ControlBlock* cb, int64_t step, uint64_t begin_ns, uint64_t end_ns, uint32_t pid, uint32_t tiers,
                    uint32_t optimizer = 0);
// The reader's side: finished steps from number `from` of the ring on (at most
// kLiveSteps back); `*next` is where the next read starts. Entries overwritten
// before they were read are counted in `*missed`.
struct LiveStepRecord {
  int64_t step;
  uint64_t begin_ns, end_ns;
  uint32_t pid, tiers;
  uint32_t optimizer;  // + 1; 0: not an optimizer step
};
void ReadLiveSteps(const ControlBlock& cb, uint64_t from, std::vector<LiveStepRecord>* out, uint64_t* next,
                   uint64_t* missed);

// Default switches: every op, no detail, memory and modules on.
void InitControlBlock(ControlBlock* cb);

// Writes a control file holding `cb` (the supervisor, before the program starts).
Status WriteControlFile(const std::string& path, const ControlBlock& cb);

// Maps a control file read-write and shared; nullptr with a status if it is
// missing, short or of another version. The mapping is never unmapped.
StatusOr<ControlBlock*> MapControlFile(const std::string& path);

}  // namespace strata::format
