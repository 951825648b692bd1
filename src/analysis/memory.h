// Memory analysis over the allocator events of model::MemoryTable (PyTorch's
// allocator through strata's observer, or PyTorch-profiler "[memory]" events
// through the Kineto importer): per (process, device)
//   - the level over time, and a display copy of it thinned so that extremes stay;
//   - the peak: bytes, time, step, the allocator's reserved bytes at that moment
//     and the fragmentation they imply;
//   - what was live at the peak, grouped by the op that allocated it;
//   - churn per step: allocations, frees, bytes, and temporaries (allocations
//     freed within the step that made them).
//
// Layers (model::MemoryLayer): a framework allocator's blocks and the
// accelerator runtime's allocations (cudaMalloc, module statics) are separate
// timelines of the same (process, device), never summed: the runtime's is what
// the caching allocator reserved. Where both exist, the allocator's is the
// device's level (Find), and the per-op, per-step and temporaries figures count
// its events only.
//
// Levels: the allocator's own total when its events carry one (it counts what
// was allocated before tracing began); otherwise the running sum of the events,
// raised so that it never goes below zero (frees of blocks allocated before the
// trace began show that at least that much was live).
//
// Live blocks are matched by address: an allocation stays live until a free of
// the same address on the same (process, device). Events without addresses
// (old Kineto traces) give levels and churn but no live set and no temporaries.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/trace.h"

namespace strata::analysis {

struct MemoryPoint {
  int64_t ts;
  int64_t bytes;  // allocated after this event
};

// Mean over the steps that a device's churn counts, and the largest step.
struct PerStepStat {
  double mean = 0;
  int64_t max = 0;
};

struct MemoryChurn {
  size_t steps = 0;  // steps counted (every step of the device's process)
  PerStepStat allocs, frees, bytes_allocated, bytes_freed;
  PerStepStat temporaries, temporary_bytes;  // allocated and freed in the same step
  // Temporaries freed before the op that allocated them ended (scratch space).
  PerStepStat op_temporaries, op_temporary_bytes;
};

// Live bytes at the peak that one op (or module, or scope) allocated.
struct LiveGroup {
  std::string name;
  int64_t bytes = 0;
  uint64_t count = 0;
};

struct DeviceMemory {
  uint32_t process = 0;
  std::string process_label;
  int32_t device = model::kNone;  // kNone: host
  model::MemoryLayer layer = model::MemoryLayer::kAllocator;
  bool shadowed = false;           // a runtime layer under a framework allocator's (same process and device)
  int64_t peak_bytes = 0;
  int64_t peak_ts = 0;
  int64_t peak_step = -1;          // number of the step containing the peak; -1 outside steps
  int64_t reserved_at_peak = -1;   // the allocator's reserved bytes at the peak; -1 not reported
  double fragmentation = -1;       // 1 - peak / reserved_at_peak; -1 unknown
  bool allocator_totals = false;   // levels are the allocator's totals (else a running sum)
  bool addresses = false;          // events carry addresses: live set and temporaries are known
  uint64_t allocs = 0, frees = 0;
  int64_t bytes_allocated = 0;     // sum of allocation sizes (churn)
  int64_t bytes_freed = 0;
  // At the peak, largest first. Bytes live at the peak that no allocation in
  // the trace accounts for (allocated before it began) form the group
  // "(allocated before the trace)".
  std::vector<LiveGroup> live_at_peak;
  MemoryChurn churn;
  std::vector<MemoryPoint> timeline;  // every event, in time order
};

struct OpMemory {
  std::string name;
  uint64_t allocs = 0;        // made directly by the op (not by ops it calls)
  int64_t bytes = 0;
  int64_t peak_increase = 0;  // max over calls of (highest level during the call - level at its start)
};

struct MemorySummary {
  std::vector<DeviceMemory> devices;  // per (process, device), in order of first event
  std::vector<OpMemory> ops;          // by bytes allocated
};

// Step windows to count churn in. Empty: the kStep slices of each device's process.
struct MemoryOptions {
  struct Window {
    int64_t start, end;
    int64_t number;
  };
  std::vector<Window> steps;  // sorted by start, not overlapping
};

MemorySummary Memory(const model::Trace& t, const MemoryOptions& opt = {});

// At most about `max_points` points of `v` for display: per bucket of
// consecutive events its lowest and highest point, in time order, so that the
// peak (and every trough) survives the thinning.
std::vector<MemoryPoint> DownsampleTimeline(const std::vector<MemoryPoint>& v, size_t max_points);

// Ops that only allocate (and fill) a tensor: what "allocating" means for the
// time a step spends getting memory.
bool IsAllocationOpName(std::string_view name);

// The name that allocations made at `ts` on `track` are charged to: the innermost
// op, moved out through allocation ops (aten::empty under aten::zeros charges
// aten::zeros, the call the program made), else the innermost module, else the
// innermost slice; "" outside every slice.
std::string AllocatingName(const model::Trace& t, uint32_t track, int64_t ts);

// Allocations inside a set of step windows, for the memory_allocation finding.
struct StepAllocations {
  uint64_t allocs = 0;
  int64_t bytes = 0;
  uint64_t temporaries = 0;       // freed in the window that allocated them or the next (all when addresses are unknown)
  int64_t temporary_bytes = 0;
  bool addresses = false;         // temporaries matched by address (else every allocation counts)
  std::vector<LiveGroup> temporaries_by_name;  // by AllocatingName, largest first
  // The allocation-op slices (IsAllocationOpName, outermost of a chain) that
  // made those temporaries: the time a step spends getting fresh memory.
  std::vector<int32_t> allocating_slices;
  std::vector<int32_t> devices;   // devices (kNone: host) the temporaries were on
};
StepAllocations AllocationsInWindows(const model::Trace& t, const std::vector<MemoryOptions::Window>& windows);

// --- timelines (shared with the framework step table) ------------------------------

struct MemoryTimelines {
  std::vector<DeviceMemory> devices;  // levels, peaks and counts only
  // The device's level: its framework allocator's, else its runtime's.
  const DeviceMemory* Find(uint32_t process, int32_t device) const;
};
MemoryTimelines BuildMemoryTimelines(const model::Trace& t);

// Highest level of a timeline within a time range: O(n / 64 + 128) per query.
class TimelineMax {
 public:
  explicit TimelineMax(const std::vector<MemoryPoint>* v);
  // Highest level in [from, to] including the level carried in from before `from`;
  // INT64_MIN for an empty timeline.
  int64_t Max(int64_t from, int64_t to) const;
  // Level just before `ts` (0 before the first event).
  int64_t LevelBefore(int64_t ts) const;
  // Number of events in [from, to] that raised the level.
  uint64_t Raises(int64_t from, int64_t to) const;

 private:
  size_t Lower(int64_t ts) const;
  int64_t MaxIdx(size_t lo, size_t hi) const;
  static constexpr size_t kBlock = 64;
  const std::vector<MemoryPoint>* v_;
  std::vector<int64_t> blocks_;
};

}  // namespace strata::analysis
