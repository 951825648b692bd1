// TensorFlow's step stats of a traced TF1 program, merged into the trace as it
// loads: <trace>/stepstats/<pid>/, where strata._tf wrote the RunMetadata of
// each Session.run it ran with RunOptions(trace_level=FULL_TRACE) for
// --ops-steps A-B (<step>.pb, serialized as TensorFlow returned it), beside
// strata_clock.json (the pid and a wall-clock / trace-clock pair).
//
// Each node execution (NodeExecStats) becomes a kOp slice named by its op type
// (from its timeline label "name = Type(inputs)"), from its executor start to
// its end (all_start, all_end_rel: the span TensorFlow's own timeline draws),
// with args tf_op = "name:Type" (as TensorFlow's profiler names ops, so the
// layer and placement analyses read both alike) and compute_ns (the kernel's
// Compute, op_start_rel to op_end_rel). Nodes run in parallel by the
// executor's threads: each device's nodes are laid on as few tracks ("lanes")
// as keep them from overlapping. Allocation records (when the allocator tracks
// them: GPU allocators) become memory rows of their allocator's device.
#pragma once

#include <string>
#include <string_view>

#include "model/trace.h"

namespace strata::importers::strata_ctf {

// Before Finalize; problems are warnings.
void MergeStepStats(const std::string& trace_dir, model::Trace& t);

// One serialized RunMetadata into `t` (process `process`, times shifted by
// `realtime_to_trace`); false when it is not one. Used by the fuzz target.
bool MergeRunMetadata(model::Trace& t, std::string_view bytes, uint32_t process, int64_t realtime_to_trace);

}  // namespace strata::importers::strata_ctf
