// Framework-level analyses (PyTorch today): training steps with throughput and
// data-loading waits, per-op and per-module time, the dataflow graph (memory:
// analysis/memory.h). Pure functions over the model.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analysis/memory.h"
#include "analysis/summary.h"
#include "model/trace.h"

namespace strata::analysis {

struct FrameworkOptions {
  int64_t skip_steps = 0;  // warm-up steps left out of step statistics
  int64_t batch_size = 0;  // samples per step given by the user (0: from the trace)
};

// --- steps ---------------------------------------------------------------------

struct TrainingStep {
  uint64_t number = 0;
  int32_t slice = model::kNone;  // its kStep slice (the thread that ran it: its track)
  int64_t ts = 0;
  int64_t dur = 0;
  int64_t data_wait_ns = 0;  // inside DataLoader __next__ (waiting for the batch)
  int64_t samples = 0;       // 0 unknown
  int64_t mem_peak = -1;     // highest host memory allocated through the framework during the step, bytes
  uint64_t allocs = 0;       // allocations made during the step
  bool skipped = false;      // a warm-up step (FrameworkOptions::skip_steps), or partial
  bool partial = false;      // a found first step: from its first activity, not the loop's start
  bool profiled = false;     // run under a framework's own profiler (--ops-steps): its time is not the program's alone
};

struct TrainingSteps {
  std::vector<TrainingStep> steps;  // every step, in time order
  size_t skipped = 0;
  Distribution duration;            // of the steps not skipped
  int64_t batch_size = 0;           // samples per step when all counted steps agree, else 0
  double samples_per_s = 0;         // counted samples / counted step time; 0 when unknown
  double data_wait_pct = 0;         // share of counted step time spent waiting for batches
};
TrainingSteps Training(const model::Trace& t, const FrameworkOptions& opt);

// --- ops and modules -------------------------------------------------------------

struct FrameworkOpStats {
  std::string name;
  std::string scope;      // model::OpScopeName, or "module"
  uint64_t count = 0;
  int64_t total_ns = 0;
  int64_t self_ns = 0;
  int64_t max_ns = 0;
  double self_pct = 0;    // share of all ops' self time
  int64_t flops = -1;     // detail tier: the op's own estimates summed (-1: none); an op
  int64_t bytes = -1;     // nested in another estimated op overlaps with it
  uint64_t backward_linked = 0;  // backward nodes linked to their forward op
};

struct FrameworkOpsSummary {
  std::string mode;       // how ops were recorded: "all", "sampled", "off", "" (no framework level)
  uint64_t ops = 0;       // op instances recorded
  int64_t recorded_ns = 0;  // time inside op windows (per process, summed)
  int64_t run_ns = 0;       // time the processes with op windows ran (from their first window)
  double coverage = 0;      // recorded_ns / run_ns: scale recorded times by 1/coverage for run totals
  uint64_t backward = 0, backward_linked = 0;  // backward nodes with a sequence number; linked to a forward op
  int64_t flops = 0, bytes = 0;  // detail tier: estimates of the outermost estimated ops (no double counting)
  std::vector<FrameworkOpStats> ops_by_name;  // kOp slices and record_function scopes, by self time
  std::vector<FrameworkOpStats> modules;      // kModule slices, by total time
};
FrameworkOpsSummary FrameworkOps(const model::Trace& t);

// --- memory: analysis/memory.h (Memory(), DeviceMemory, OpMemory) --------------------

// --- dataflow ----------------------------------------------------------------------

struct GraphStats {
  std::string name;
  std::string process;
  size_t nodes = 0, edges = 0;
};

struct DataflowSummary {
  size_t edges = 0;
  size_t ops_with_edges = 0;
  std::vector<std::pair<std::string, uint64_t>> top_pairs;  // "producer -> consumer" by count
  std::vector<GraphStats> graphs;
};
DataflowSummary Dataflow(const model::Trace& t);

// The innermost slice of `kind` that contains `slice` (itself included), or kNone.
int32_t EnclosingOfKind(const model::Trace& t, int32_t slice, model::SliceKind kind);

}  // namespace strata::analysis
