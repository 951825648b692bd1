// Collectives from framework ops: TensorFlow's collective ops
// (CollectiveReduceV2 and the rest, which MultiWorkerMirroredStrategy and
// TPU/GPU strategies run; NcclAllReduce) as rows of Trace::collectives, for the
// processes that have no rows from a backend of their own (PyTorch's c10d
// works, NCCL kernels). Each op slice is a row: "tf:all_reduce",
// "tf:all_gather", "tf:broadcast", "tf:reduce_scatter", "tf:all_to_all";
// numbered per process in time order (every worker runs its collectives in
// one order: the instance keys of a step's graph).
#pragma once

#include <string_view>

#include "model/trace.h"

namespace strata::importers {

// "all_reduce" for "CollectiveReduceV2" (also "scope/CollectiveReduceV2:0"), or "".
std::string_view TfCollectiveKind(std::string_view op_name);

// After Trace::Finalize. Returns the rows added.
size_t AddOpCollectives(model::Trace& t);

// Every column of `c` in the order the model promises: by process, then
// sequence number (stably). Shared by the importers that add rows.
void SortCollectives(model::CollectiveTable& c);

}  // namespace strata::importers
