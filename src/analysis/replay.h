// What-if replay of measured steps: each step's dependency graph, rebuilt from
// the trace and re-scheduled with a fix applied (the method of Daydream, USENIX
// ATC'20, on strata's model).
//
// The graph of one step:
//   - the step thread's time as a chain of host pieces (analysis/step_breakdown.h:
//     each the own time of one slice, or the program's code between them), each
//     with its part of the step;
//   - device tasks (kernels, copies, fills) on their queues, each after the
//     previous task of its queue and after its launch call (at the call's
//     measured offset and launch latency);
//   - waits: a piece inside a synchronization call ends when the device work
//     launched before it has finished (plus the call's own cost); a copy call
//     that returned only once its copy had ended (a synchronous or pageable copy)
//     ends when that copy does;
//   - device work launched by another thread while the step thread waits for
//     it (autograd's device threads run the backward while the caller blocks)
//     is launched by that wait's piece, and moves with it;
//   - device work launched elsewhere (before the step, or by a thread the step
//     thread was not waiting for) stays at its measured time, and occupies its
//     queue.
// A replayed step ends when its host chain does, and never before its queues
// could have run their work (a program that never waits for its device is
// bound by the device's busy time).
//
// A fix changes the graph: pieces shorter (launch cost cut, allocations cached,
// reads batched), waits dropped (syncs removed, copies made asynchronous),
// device tasks shorter (pinned copies), input overlapped with the rest of the
// step. Its gain is the replayed step without it against the replayed step
// with it, so what the model misses of the measured step cancels out; the
// replay of the unchanged graph against the measured step says how much that is.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <vector>

#include "analysis/step_breakdown.h"
#include "base/intervals.h"
#include "model/trace.h"

namespace strata::analysis {

struct ReplayPiece {
  int64_t start = 0, dur = 0;  // measured
  StepPart part = StepPart::kPython;
  int32_t slice = model::kNone;
  // What the piece waits for: nothing, the device work launched before it, or one task.
  enum Wait : uint8_t { kNoWait, kWaitDevice, kWaitTask } wait = kNoWait;
  int32_t wait_task = -1;  // index into the step's tasks (kWaitTask)
  int64_t own = 0;         // the piece's time less its measured wait (the call's own cost)
  bool elsewhere = false;  // another thread's work the step thread waits for (HostInterval::elsewhere)
};

struct ReplayTask {
  uint32_t row = 0;     // model::DeviceActivityTable row
  uint32_t queue = 0;   // index among the step's queues
  int32_t piece = -1;   // the host piece that launched it (-1: fixed at its measured time)
  int64_t offset = 0;   // launch time after the piece's start (measured)
  int64_t latency = 0;  // from launch to start when its queue was free
  int64_t start = 0, dur = 0;  // measured, start relative to the step's start
};

struct ReplayStep {
  size_t window = 0;  // index of the step in the windows given
  int64_t ts = 0, dur = 0;
  std::vector<ReplayPiece> pieces;
  std::vector<ReplayTask> tasks;  // launched ones in launch order, then the fixed ones by start
  size_t launched = 0;            // tasks[0, launched) were launched by the step's pieces
  uint32_t queues = 0;
};

// A change to the graph. Unset members change nothing.
struct ReplayFix {
  // The new duration of a piece's own time (its wait is replayed), in ns.
  std::function<double(const ReplayStep&, const ReplayPiece&)> host;
  // True: the piece no longer waits (a sync removed, a copy made asynchronous).
  std::function<bool(const ReplayStep&, const ReplayPiece&)> drop_wait;
  // The new duration of a device task, in ns.
  std::function<double(const ReplayStep&, const ReplayTask&)> device;
  // Pieces of these parts (bit 1 << StepPart) run beside the rest of the step
  // (input: loader workers, prefetch; the program's code: a background
  // thread): the step takes the longer of the two.
  uint32_t overlap_parts = 0;
  void Overlap(StepPart p) { overlap_parts |= 1u << static_cast<unsigned>(p); }
};

struct ReplayResult {
  size_t steps = 0;
  double measured_ns = 0;   // mean measured step
  double baseline_ns = 0;   // mean replayed step without the fix
  double fixed_ns = 0;      // mean replayed step with it
  // The relative change the fix predicts, applied to the measured step.
  double GainPct() const { return baseline_ns > 0 ? 100.0 * (1 - fixed_ns / baseline_ns) : 0; }
  double StepAfterNs() const { return baseline_ns > 0 ? measured_ns * fixed_ns / baseline_ns : measured_ns; }
};

class Replay {
 public:
  // `timelines`: BreakdownWindows' pieces of each window (same order).
  Replay(const model::Trace& t, const std::vector<StepWindow>& windows,
         const std::vector<std::vector<HostInterval>>& timelines);

  const std::vector<ReplayStep>& steps() const { return steps_; }
  // Replays every counted step with the fix (and without, once, cached).
  ReplayResult Run(const ReplayFix& fix) const;
  // The unchanged graph's replay against the measured steps: mean |error| in %.
  double BaselineErrorPct() const;

 private:
  double ReplayOne(const ReplayStep& s, const ReplayFix* fix) const;
  std::vector<ReplayStep> steps_;
  std::vector<double> baseline_;  // per step
};

// A cut of `ns_per_step` from the pieces of some parts (in proportion to
// their time, at most all of it), and what those cannot give from the pieces
// of the `then` parts: the what-if of a fix that removes that much.
struct PartCut {
  std::vector<StepPart> parts;
  double ns_per_step = 0;
  std::vector<StepPart> then = {};
};
// The cuts apply one after the other (a later cut of a part takes from what
// the earlier ones left).
ReplayFix ReduceParts(const std::vector<PartCut>& cuts, const std::vector<ReplayStep>& steps);

// Each step's host pieces lose their time inside that step's intervals
// (`per_window[window]`: sorted, disjoint [start, end) pairs), in proportion:
// the step without some calls (checkpoints) or waits (for the GIL).
ReplayFix RemoveTime(std::vector<Intervals> per_window);

// Device tasks matching `pick` (by device row) take `keep` of their time.
ReplayFix ScaleTasks(std::function<bool(uint32_t row)> pick, double keep);

// Whether `slice` is one of `set` or nested in one (kNone: no).
bool WithinAny(const model::Trace& t, int32_t slice, const std::set<int32_t>& set);

}  // namespace strata::analysis
