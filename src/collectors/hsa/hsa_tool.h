// The AMD collector (libstrata_hsa.so): an HSA tools library for ROCm's runtime
// (ROCr 5.2 in Debian 12). `strata record` puts it in HSA_TOOLS_LIB; the
// runtime loads it inside the process's first hsa_init (HIP calls it at its
// first API use) and calls OnLoad with its API table, every exported hsa_*
// function being a trampoline through that table. Without /dev/kfd hsa_init
// fails before loading tools, and the manifest says so.
//
// NOT RUN ON AN AMD GPU: there is none here. It is built against Debian's
// libhsa-runtime-dev 5.2.3 headers and its decoding is tested by driving
// OnLoad with a table of fake runtime functions that fill the runtime's own
// structs (AQL packets, profiling times, pool info). scripts/gpu-check has the
// AMD path for a machine that has one.
//
// What it records, into the device model of format/schema_accel.h:
//  - every HSA API call (core and AMD extension tables) as an API slice on the
//    calling thread, except the polling/doorbell calls that run per packet
//    (signal loads/stores/atomics, queue index operations) unless
//    STRATA_HSA_API=all;
//  - kernel dispatches: queues are created as intercept queues with profiling
//    on; each AQL kernel-dispatch packet is rewritten to complete a signal of
//    ours (the runtime's dispatch times are readable only from a signal nobody
//    reuses), gets a "dispatch" API slice on the submitting thread with the
//    kernel's name and grid/work-group sizes, and when our signal fires (ROCr's
//    async-handler thread) the device start/end come from
//    hsa_amd_profiling_get_dispatch_time and the program's own completion
//    signal is decremented, as the packet would have;
//  - async copies (hsa_amd_memory_async_copy[_rect]) the same way, timed with
//    hsa_amd_profiling_get_async_copy_time, direction from the agents;
//  - memory-pool allocations and frees; device descriptions of GPU agents.
// Times are HSA system ticks (HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY), mapped to
// CLOCK_MONOTONIC by bracketing HSA_SYSTEM_INFO_TIMESTAMP, re-measured each second.
#pragma once

#include <hsa/hsa.h>
#include <hsa/hsa_api_trace.h>
#include <hsa/hsa_ext_amd.h>

#include <cstdint>

namespace strata::hsa {

struct ToolStats {
  uint64_t api_calls = 0;
  uint64_t dispatches = 0;      // kernel dispatch packets seen
  uint64_t dispatches_timed = 0;
  uint64_t copies = 0, copies_timed = 0;
  uint64_t untimed = 0;         // profiling times unavailable
  uint64_t signal_failures = 0; // no signal of ours: passed through untimed
};

// OnLoad's work; false if the table is too old/small for what strata needs.
bool Load(HsaApiTable* table);
void Unload();
ToolStats Stats();

}  // namespace strata::hsa
