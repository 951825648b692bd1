// The NCCL collectives of an imported PyTorch-profiler trace, as rows of
// Trace::collectives, so that the analysis of ranks (analysis/comms.h) reads
// a Kineto file as it reads strata's own traces once `strata merge` has put a
// job's ranks into one trace.
//
// One row per NCCL kernel (ncclKernel_*, ncclDevKernel_*): that is the
// collective as the GPU ran it, and where the ranks wait for each other.
// Kineto writes, for each collective torch.distributed issues,
//
//   record_param_comms (cpu_op; "Collective name", "In msg nelems", "dtype",
//    |                  "Seq" on newer torch, when torch was built with them)
//    `- nccl:all_reduce (user_annotation: c10d's profiling title; with
//        |              record_shapes, "Input Dims"/"Input type" of its inputs)
//        `- cudaLaunchKernel (cuda_runtime) --correlation--> ncclKernel_...
//
// and any of these may be missing (an event-sampled trace keeps some and not
// others; older torch writes no collective args). The row's name is the title
// when it is there, else "nccl:" and the collective name in the title's
// spelling ("allreduce" -> "nccl:all_reduce"), else the kernel's name in that
// spelling (ncclKernel_AllReduce_RING_LL_Sum_float -> "nccl:all_reduce").
#pragma once

#include <cstddef>

#include "model/trace.h"

namespace strata::importers::kineto {

// Fills t.collectives (empty before) from the NCCL kernels of a finalized
// trace whose device rows are linked to their launches. Each row's process is
// the host process that launched the kernel (the one that holds the rank's
// steps); its time and track are the kernel's; seq is the records' "Seq" where
// every row of the process has a distinct one, else the process's issue order
// (the launches' times). Rows are sorted by (process, seq). Returns the count.
size_t AddNcclCollectives(model::Trace& t);

}  // namespace strata::importers::kineto
