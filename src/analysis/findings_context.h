// What the diagnosis rules share: the measured steps, their critical paths, and
// helpers to express a cost per step. Internal to analysis/findings*.cc.
#pragma once

#include <cstdint>
#include <functional>
#include <deque>
#include <memory>
#include <string_view>
#include <vector>

#include "analysis/critical_path.h"
#include "analysis/findings.h"
#include "analysis/replay.h"
#include "analysis/step_breakdown.h"
#include "model/trace.h"

namespace strata::analysis {

// The framework the program ran on, for fixes in its own terms.
enum class Framework { kUnknown, kPyTorch, kTensorFlow, kJax, kOnnxRuntime };
// From the collectors that recorded (strata traces), else the source format and
// what it holds (Kineto: PyTorch; XSpace: TensorFlow ops, or XLA modules alone: JAX).
Framework DetectFramework(const model::Trace& t);

struct FindingsContext {
  FindingsContext(const model::Trace& trace, const DiagnosisOptions& options);

  const model::Trace& t;
  DiagnosisOptions opt;
  Framework framework = Framework::kUnknown;
  // The fix in the program's framework: `tf` for TensorFlow and JAX (XLA), `torch` otherwise.
  const char* Fix(const char* torch, const char* tf) const {
    return framework == Framework::kTensorFlow || framework == Framework::kJax ? tf : torch;
  }

  // The measured steps (warm-up skipped), or the whole trace as one window.
  struct Window {
    int64_t start, end;
    uint32_t track;  // the thread that ran the step (UINT32_MAX: no steps)
  };
  std::vector<Window> windows;  // sorted by start
  // One per window. Only `walked` of them were walked (kMaxWalkedSteps,
  // evenly spread, are; the others carry their step but no segments), and only
  // those steps are replayed: sums over paths are scaled to all the windows.
  // (Pointers into the memoized walks, not copies of them.)
  std::vector<const StepCriticalPath*> paths;
  std::vector<uint8_t> walked;
  size_t walked_steps = 0;
  bool has_steps = false;
  size_t steps = 0;
  int64_t total_step_ns = 0;
  double step_ns = 0;  // mean
  std::shared_ptr<const model::Column<int64_t>> self;  // SharedSelfTimes(t)
  // The measured steps' time by part (analysis/step_breakdown.h): what a rule
  // may claim of its part.
  StepBreakdowns breakdown;
  // The measured steps' dependency graphs, for the what-if of each finding.
  std::unique_ptr<Replay> replay;
  // What `paths` point to: the walks (shared), the steps not walked (their bounds alone).
  std::shared_ptr<const std::vector<StepCriticalPath>> walked_paths;
  std::deque<StepCriticalPath> unwalked_paths;
  // Sets the finding's gain to what replaying the steps with the fix predicts
  // (and says so in its metrics); returns the replay's figures.
  ReplayResult Replayed(Finding* f, const ReplayFix& fix) const;

  // The CPU the program used in its steps: the on-CPU time per step of every
  // thread of each step's process and of its child processes (a loader's
  // workers), and the CPUs of the machine (online where it was recorded; in
  // a trace that does not say, those the program's threads ran on). Zeros
  // without thread states (no scheduling trace).
  struct CpuUse {
    double ns_per_step = 0;
    int cpus = 0;
  };
  CpuUse ProgramCpu() const;

  // Index of the window containing ts, or -1.
  int WindowOf(int64_t ts) const;
  bool InSteps(size_t slice) const;
  std::string_view Name(size_t slice) const;
  double PerStep(double total_ns) const;
  double Pct(double per_step_ns) const;  // of the mean step
  // Time on the measured steps' critical paths in segments matching pred
  // (over the walked steps, scaled to all of them).
  int64_t PathTime(const std::function<bool(const PathSegment&)>& pred) const;
  // Time on the critical paths inside slices (or their descendants) matching is_target.
  int64_t PathTimeInside(const std::function<bool(size_t)>& is_target) const;
};

// Rules in their own files (rules_<topic>.cc).
void ComputeBound(FindingsContext& c, std::vector<Finding>* out);  // rules_roofline.cc
void MemoryBound(FindingsContext& c, std::vector<Finding>* out);   // rules_roofline.cc
void UnoptimizedLibrary(FindingsContext& c, std::vector<Finding>* out);  // rules_library.cc
void PythonCode(FindingsContext& c, std::vector<Finding>* out);          // rules_python.cc
void DispatchOverheadHost(FindingsContext& c, std::vector<Finding>* out);  // rules_dispatch.cc
void Checkpointing(FindingsContext& c, std::vector<Finding>* out);       // rules_checkpoint.cc
void EagerExecution(FindingsContext& c, std::vector<Finding>* out);      // rules_eager.cc
void GilContention(FindingsContext& c, std::vector<Finding>* out);       // rules_gil.cc
void AllocationOps(FindingsContext& c, std::vector<Finding>* out);       // rules_memory.cc
void Memcpy(FindingsContext& c, std::vector<Finding>* out);              // rules_memory.cc
// Rules in rules_os.cc (OS level: system calls, scheduling, step-time tails).
void IoSyscalls(FindingsContext& c, std::vector<Finding>* out);
void CpuContention(FindingsContext& c, std::vector<Finding>* out);
void Straggler(FindingsContext& c, std::vector<Finding>* out);          // rules_straggler.cc
void RankStraggler(FindingsContext& c, std::vector<Finding>* out);       // rules_comms.cc
void ExposedCollectives(FindingsContext& c, std::vector<Finding>* out);  // rules_comms.cc
// Rules in rules_placement.cc.
void HostPlacement(FindingsContext& c, std::vector<Finding>* out);
void CrossDevicePlacement(FindingsContext& c, std::vector<Finding>* out);

}  // namespace strata::analysis
