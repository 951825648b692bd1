// Critical path of a step: the chain of work that set the step's length, across
// CPU threads, accelerator launches and device queues, synchronizations and the
// dataflow edges the trace recorded (flows).
//
// Method: walk backward from the step's end on the thread that ran the step.
// While that thread was doing work, the work is on the path. When it was
// waiting, follow what released it:
//   - a slice that starts right after a wait because of incoming flows (a
//     consumer node waiting for its producers, a kernel waiting for its launch)
//     continues at the producer that finished last;
//   - a synchronization call (cudaDeviceSynchronize, clFinish, ...) or the
//     device-sync record continues at the device activity that ended last
//     inside it;
//   - a kernel that starts right after the previous kernel on its queue ended
//     continues on the queue (queue-bound); otherwise at its launch call;
//   - a wait with no recorded dependency (a condition variable, a join) continues
//     at the work that finished last in the process before the wait ended.
// Each piece of time lands on exactly one segment, so the segments sum to the
// step's duration.
#pragma once

#include <cstdint>
#include <string>
#include <memory>
#include <vector>

#include "model/trace.h"

namespace strata::analysis {

enum class SegmentType : uint8_t {
  kWork,     // a slice's own time on a CPU thread
  kDevice,   // device activity (kernel, copy, fill)
  kLaunch,   // the runtime call that launched device work on the path
  kWait,     // a thread waiting with no recorded cause (attributed as idle)
};
const char* SegmentTypeName(SegmentType t);

struct PathSegment {
  int64_t start = 0, end = 0;
  uint32_t track = 0;
  int32_t slice = model::kNone;  // the innermost slice, kNone for a wait
  SegmentType type = SegmentType::kWork;
};

// One item on (or off) the path, aggregated by (kind, name).
struct PathItem {
  std::string name;
  std::string kind;       // model::SliceKindName, or "wait"
  int64_t on_path_ns = 0;
  double share = 0;       // of the step's duration
};

// Work that ran in parallel with the path and fed it: how long it could have
// been slower without lengthening the step.
struct SlackItem {
  std::string name;
  std::string kind;
  int64_t slack_ns = 0;   // minimum over its occurrences
  int64_t duration_ns = 0;
};

struct StepCriticalPath {
  uint64_t step = 0;            // step number (the step slice's arg)
  int32_t step_slice = model::kNone;
  int64_t start = 0, end = 0;
  std::vector<PathSegment> segments;  // in time order
  std::vector<PathItem> items;        // by time on path, descending
  std::vector<SlackItem> slack;       // off-path producers of on-path work, least slack first
};

// The most steps whose paths are walked (evenly spread over the trace): every
// step of a trace with fewer, a sample of a longer one, so that the time and
// memory of the walks and of the findings' what-if replays stay bounded on
// traces of thousands of steps. Consumers scale sums over the walked steps.
inline constexpr size_t kMaxWalkedSteps = 256;

struct CriticalPathOptions {
  size_t max_steps = 64;       // analyse at most this many steps (evenly spread)
  size_t max_walked = kMaxWalkedSteps;  // the steps walked once for every consumer (tests lift it)
  int64_t queue_gap_ns = 2000; // a kernel starting this soon after its predecessor is queue-bound
};

// Critical paths of the trace's steps (or of the whole trace as one "step" when
// there are none).
std::vector<StepCriticalPath> CriticalPaths(const model::Trace& t, const CriticalPathOptions& opt = {});
// The paths of every step CriticalPaths walks (up to opt.max_walked, evenly
// spread; opt.max_steps is not applied), shared with every caller while a
// Memo of `t` lives: not copied.
std::shared_ptr<const std::vector<StepCriticalPath>> WalkedCriticalPaths(const model::Trace& t,
                                                                        const CriticalPathOptions& opt = {});

// The critical path of one step (`step_slice`: a step slice), walked alone: for
// a question about one step (where an event sits on its step's path) without
// walking the others.
StepCriticalPath CriticalPathOfStep(const model::Trace& t, uint32_t step_slice, const CriticalPathOptions& opt = {});

// Which `n` of `total` items an evenly spread choice takes (all when n >=
// total), in order: item k * total / n for k in [0, n). Every consumer of the
// walked steps makes its choice through this, so that they agree.
std::vector<size_t> EvenlySpread(size_t total, size_t n);

// The trace's step slices in time order: the windows CriticalPaths walks (all
// of them when max_steps allows), in the order it returns their paths.
std::vector<uint32_t> StepSlicesByTime(const model::Trace& t);

// Items aggregated over several steps: mean time on path per step.
std::vector<PathItem> AggregatePathItems(const std::vector<StepCriticalPath>& paths);

}  // namespace strata::analysis
