// Importer for PyTorch-profiler (Kineto) traces and other Chrome trace JSON:
// `.json` or `.json.gz`, every schema Kineto has written since 2021 (legacy
// categories Operator/Runtime/Kernel/Memcpy with "stream N" tids, the current
// cpu_op/cuda_runtime/kernel/gpu_memcpy ones, fractional-microsecond
// timestamps, ROCm traces).
//
// What goes where in the model:
//   cpu_op, Operator                 -> SliceKind::kOp on the thread's track
//   user_annotation                  -> kSpan; "ProfilerStep#N" -> kStep with arg N
//   python_function                  -> kPython; "nn.Module: Linear_3" (with_modules)
//                                       -> kModule named "Linear_3"
//   cuda_runtime, Runtime            -> kRuntime (arg = correlation id)
//   cuda_driver                      -> kDriver  (arg = correlation id)
//   kernel/gpu_memcpy/gpu_memset/cuda_sync (and the legacy names)
//                                    -> kKernel/kMemcpy/kMemset/kDeviceSync on
//                                       the device's stream track, one
//                                       DeviceActivityTable row each, linked to
//                                       the runtime call by correlation id
//   gpu_user_annotation              -> kAnnotation on the stream track
//   NCCL kernels (with their record_param_comms and c10d title, when the
//   trace has them)                  -> also a Trace::collectives row each
//                                       (comms.h)
//   "distributedInfo": {"rank"}      -> Process::rank of every process
//   "[memory]" instants              -> MemoryTable; other instants -> InstantTable
//   "C" counters                     -> CounterTable
//   s/t/f flows other than the launch flows (which the correlation link
//   already represents)              -> FlowTable
// Args that have a column go there; the others are kept in ArgTable, except a
// few that are derived or internal (Ev Idx, Record function id, queued,
// context, blocks/warps per SM, cbid).
//
// Timestamps are microseconds in the file and nanoseconds in the model,
// converted exactly from the decimal text (no float rounding).
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "importers/load_options.h"
#include "model/trace.h"

namespace strata::importers {

// True when `head` (the first bytes of a file, decompressed) looks like a JSON
// trace: an object or an array after optional whitespace.
bool LooksLikeJsonTrace(std::string_view head);

StatusOr<model::Trace> LoadKinetoTrace(const std::string& path, const LoadOptions& opt = {});
// The same from bytes in memory (JSON or gzip); used by the fuzz target.
StatusOr<model::Trace> ParseKinetoTrace(std::string_view bytes, const LoadOptions& opt = {});

}  // namespace strata::importers
