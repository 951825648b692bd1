// Importer for XSpace (".xplane.pb"), the profile that TensorFlow's, JAX's and
// XLA's profilers write (TensorBoard's plugins/profile/<run>/<host>.xplane.pb).
//
// What goes where in the model:
//   "/host:*" plane                 -> one process; each line a thread track
//     events with a correlation_id  -> kRuntime: the launch of a device
//                                      activity (TF names them after the
//                                      kernel; they are named by the API
//                                      call: "cudaLaunchKernel",
//                                      "cudaMemcpyAsync", or the hip* name)
//     "name:Type" (a TF op)         -> kOp named Type, arg tf_op = full name
//     events with a device_ordinal  -> kOp: an XLA op (HLO instruction) that
//     and an hlo_op                    XLA's CPU client ran (JAX on the CPU),
//                                      named by its instruction, its module
//                                      in arg hlo_module
//     "$..." (Python tracer)        -> kPython
//     MemoryAllocation/Deallocation -> MemoryTable (allocator_name "GPU_0_bfc"
//                                      is device 0, others host memory)
//     other events                  -> kSpan (TraceMe), instants when 0 long
//   "/device:<TYPE>:N" plane        -> device N: a Device row from the plane's
//                                      stats (clock, cores, memory, bandwidth,
//                                      compute capability), a device process
//     "Stream #S(...)" lines        -> device-queue track S: kKernel, kMemcpy
//                                      (bytes from memcpy_details, kind from
//                                      the name), kMemset, one
//                                      DeviceActivityTable row each (grid,
//                                      block, registers, shared memory from
//                                      kernel_details), linked to the host's
//                                      launch by correlation id
//     "Steps" line                  -> the steps: each step's group_id names
//                                      the host events of that step; the
//                                      longest of them (the step function's
//                                      run) becomes a kStep slice on its thread
//     derived lines (TensorFlow Ops, XLA Modules, XLA Ops, name scopes)
//                                   -> not imported when the plane has streams:
//                                      the kernels carry the same ops as args
//                                      (tf_op, hlo_op, hlo_module, annotation);
//                                      on a plane without streams (a TPU) "XLA
//                                      Ops" are the kernels and the other
//                                      lines device annotations
// Every other stat of an event (and of its metadata) is an ArgTable entry.
// Time: a line's timestamp_ns plus the event's offset_ps, in nanoseconds
// (picoseconds rounded half up).
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "importers/load_options.h"
#include "model/trace.h"

namespace strata::importers {

// True when `head` (the first bytes of a file, decompressed) starts like a
// serialized XSpace: its first plane, with a plane name.
bool LooksLikeXSpace(std::string_view head);

StatusOr<model::Trace> LoadXPlaneTrace(const std::string& path, const LoadOptions& opt = {});

// Adds an XSpace that a traced process wrote (TensorFlow's profiler started by
// strata._tf for --ops-steps) to the trace being loaded, before Finalize: its
// host plane's lines become threads of process `process` (their ids are TF's,
// not the OS's: they get tracks of their own), its devices device processes,
// and its times, wall-clock nanoseconds (a Task Environment plane's
// profile_start_time plus the lines' times), the trace's clock by adding
// `realtime_to_trace_ns`. Steps of its Steps lines are not added (the trace
// has its own).
struct XSpaceMerge {
  uint32_t process = 0;
  int64_t realtime_to_trace_ns = 0;
};
Status MergeXSpace(model::Trace& t, std::string_view bytes, const XSpaceMerge& m);
// The same from bytes in memory (an XSpace, or one gzip-compressed); used by the fuzz target.
StatusOr<model::Trace> ParseXPlaneTrace(std::string_view bytes, const LoadOptions& opt = {});

}  // namespace strata::importers
