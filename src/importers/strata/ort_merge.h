// ONNX Runtime's profiles of a traced process, merged into the trace as it
// loads: <trace>/ort/<pid>/, where strata._ort had ORT's profiler write its
// JSON (profile_*.json, Chrome trace events: "Session" events such as
// model_run, "Node" events one per node run) for --ops-steps A-B, with
// strata_ort.json (pid, first_step, last_step).
//
// ORT's times are microseconds from its profiler's start: the merge puts them
// on the trace's clock by matching ORT's model_run events, in order, with the
// "ort.run" spans strata recorded on the same thread (the median of their
// offsets), and keeps the events of runs A to B (the steps asked for). Node
// events become kOp slices named by the op (FusedGemm, MatMul) with the node's
// name, provider and shapes as args, on the thread ORT ran them on.
#pragma once

#include <string>

#include "model/trace.h"

namespace strata::importers::strata_ctf {

// Before Finalize; problems are warnings.
void MergeOrtProfiles(const std::string& trace_dir, model::Trace& t);

}  // namespace strata::importers::strata_ctf
