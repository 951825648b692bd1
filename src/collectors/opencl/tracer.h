// The OpenCL collector (libstrata_opencl.so), loaded into unmodified programs
// as an ICD-loader layer: `strata record` sets OPENCL_LAYERS to this library,
// and the loader (ocl-icd >= 2.3, the Khronos loader) calls clInitLayer at the
// process's first OpenCL call with the dispatch table below it.
//
// Why a layer and not LD_PRELOAD interposition: the loader routes *every* call
// through the layer chain, including calls the program resolved with
// dlopen+dlsym and entry points returned by clGetExtensionFunctionAddress, and
// the layer gets a clean "next" table instead of RTLD_NEXT guesses. What it
// cannot see: programs that link a vendor library (libpocl.so) directly or
// bundle their own loader without layer support.
//
// For every command the program enqueues, the layer
//   - forces CL_QUEUE_PROFILING_ENABLE on the queue (and hides it again from
//     clGetCommandQueueInfo), so each command has device timestamps;
//   - records the API call (api_begin/api_end, with a fresh correlation id and
//     the kernel's name and sizes or the transfer's bytes) on the calling thread;
//   - keeps a reference to the command's event (its own event when the program
//     passed NULL) and registers a CL_COMPLETE callback that reads QUEUED/
//     SUBMIT/START/END, converts them to the trace clock and emits the device
//     activity with the same correlation id. The callback runs on the driver's
//     threads (or synchronously inside clSetEventCallback when the command has
//     already completed) and takes no lock: a mutex shared with the enqueue
//     path cost ~2 us per command on PoCL.
// Buffers and SVM allocations become allocation/free events (frees observed
// through destructor callbacks, i.e. when the object really dies).
//
// Device clocks: PoCL stamps commands with CLOCK_MONOTONIC_RAW; other drivers
// use their own domain. The first completed command of each device decides
// which host clock the device uses (the one whose reading falls between the
// enqueue and its completion); a device on none is aligned by an offset taken
// at that first completion, and the collector reports it as partial.
//
// Fork: OpenCL runtimes do not survive fork (PoCL's worker threads are gone in
// the child), so in a forked child the layer passes every call straight down.
#pragma once

#include <cstdint>

namespace strata::opencl {

struct LayerStats {
  uint64_t commands = 0;        // enqueued with an event we track
  uint64_t completed = 0;       // device activity emitted
  uint64_t aborted = 0;         // completed with a negative status
  uint64_t unprofiled = 0;      // no profiling info (queue not profiled, driver refused)
  uint64_t untracked = 0;       // enqueue succeeded but no callback could be attached
  uint64_t in_flight = 0;
  uint64_t forced_queues = 0;   // queues whose profiling strata switched on
};
LayerStats Stats();

}  // namespace strata::opencl
