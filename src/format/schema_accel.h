// The accelerator level of the trace format: device activity (kernels, copies,
// fills, syncs, allocations) on device-queue streams, runtime/driver API calls
// on thread streams, and device descriptions on the process stream.
//
// One device model for every vendor API: the CUDA (CUPTI), OpenCL and HSA
// collectors all write these event classes, so every analysis works for all.
//
// Numbering that every collector follows:
//  - device: the stream context's `device` field and every `device` field below.
//    CUDA device ordinal as the process sees it (0..63); OpenCL devices
//    kOpenClDeviceBase + the order the process first used them; HSA GPU agents
//    kHsaDeviceBase + agent order. One process can use several APIs at once
//    (PoCL's CUDA backend, HIP over HSA), so the ranges never overlap.
//  - queue: the stream context's `queue` field: CUDA stream id, or an id the
//    collector gives each OpenCL command queue / HSA queue (never a pointer).
//  - correlation: per process; joins an API call (thread stream) to the device
//    activity it caused. 0 means none.
//  - timestamps: trace clock (CLOCK_MONOTONIC ns). A device event's header
//    timestamp is its start; `end` is in the payload.
#pragma once

#include <cstdint>

namespace strata::format {

inline constexpr uint32_t kOpenClDeviceBase = 64;
inline constexpr uint32_t kHsaDeviceBase = 128;

// Thread stream, ids 32..63 (extended 13-byte header).
enum AccelThreadEvent : uint32_t {
  kApiBegin = 32,    // {u32 name, u8 domain, u64 correlation}: entering a runtime/driver call
  kApiEnd = 33,      // {i64 result}: leaving the innermost open call
  kApiLaunch = 34,   // {u64 correlation, u32 kernel, u32 grid_x, grid_y, grid_z, u32 block_x, block_y,
                     //  block_z, u32 shared_mem, u32 device, u64 queue}: the open call launches a kernel
  kApiArg = 35,      // {u32 key, u64 value}: a numeric argument of the innermost open call
  kApiArgStr = 36,   // {u32 key, u32 value}: an interned-string argument of the innermost open call
  kRangeBegin = 37,  // {u64 id, u32 name, u32 domain}: a range that may end on another thread
  kRangeEnd = 38,    // {u64 id}
  kOverhead = 39,    // {u64 end, u32 name}: time a tool (CUPTI, strata) spent on this thread
  kApiCall = 40,     // {u64 end, u32 name, u8 domain, u64 correlation, i64 result}: a whole call,
                     //  written afterwards with explicit times (activity-record fallback)
};

// Device stream, ids 0..30 (compact header). Each event's fields are declared
// once, in format/payloads_accel.h (the struct the collectors fill, the schema's
// field table and the importer's read all come from that list).
enum AccelDeviceEvent : uint32_t {
  kDevKernel = 0,   // KernelPayload: a kernel's end, launch correlation, name, grid and block
                    //  sizes, shared memory, registers, queued/submitted times (0 when unknown)
  kDevMemcpy = 1,   // MemcpyPayload: a copy's end, correlation, bytes, copy/source/destination
                    //  kinds, devices and flags
  kDevMemset = 2,   // MemsetPayload: a fill's end, correlation, bytes, value and memory kind
  kDevSync = 3,     // SyncPayload: a synchronization's end, correlation and type
  kDevMemory = 4,   // MemoryPayload: an allocation or free (operation) of bytes at an address
  kDevCommand = 5,  // CommandPayload: other queue work (map, unmap, migrate, native kernel)
  // Narrow forms of the two events that come by the million, written instead of
  // them whenever the values fit (40 and 22 bytes instead of 72 and 36): end as
  // a 32-bit duration (< 4.3 s) from the header's start, 32-bit correlation, and
  // for a kernel 16-bit block sizes and registers and no queued/submitted times;
  // for a copy 8-bit device numbers. A reader treats them exactly as the wide forms.
  kDevKernel32 = 6,  // Kernel32Payload
  kDevMemcpy32 = 7,  // Memcpy32Payload
};

// Process stream, ids 16..23.
enum AccelProcessEvent : uint32_t {
  kDeviceInfo = 16,   // {u32 device, string api, string name, string vendor, u32 compute_units,
                      //  u32 clock_khz, u64 memory_bytes, f64 memory_bandwidth (B/s),
                      //  f64 peak_flops_f64, f64 peak_flops_f32, f64 peak_flops_f16, string properties}
  kQueueInfo = 17,    // {u32 device, u64 queue, string name}
  kRecordsLost = 18,  // {string source, u64 total}: records a vendor runtime lost before strata saw
                      //  them (running total per source: the reader keeps the largest)
  kKernelMetrics = 19,  // {u64 correlation, u32 device, f64 flops_f64, f64 flops_f32, f64 flops_f16,
                        //  f64 dram_bytes, f64 achieved_occupancy (0..1), string metrics ("name=value;...")}:
                        //  hardware metrics of the kernel with this correlation id (--gpu-metrics)
};

// api_begin.domain / api_call.domain
enum class ApiDomain : uint8_t { kRuntime = 0, kDriver = 1 };

// memcpy.copy_kind: the model's CopyKind numbering.
enum class CopyKind : uint8_t { kUnknown = 0, kHtoD = 1, kDtoH = 2, kDtoD = 3, kHtoH = 4, kPtoP = 5 };

// memcpy.src_kind/dst_kind, memset/memory.memory_kind: CUPTI's CUpti_ActivityMemoryKind numbering.
enum class MemoryKind : uint8_t {
  kUnknown = 0, kPageable = 1, kPinned = 2, kDevice = 3, kArray = 4, kManaged = 5,
  kDeviceStatic = 6, kManagedStatic = 7,
};

// memcpy.flags
inline constexpr uint8_t kCopyAsync = 1;
inline constexpr uint8_t kCopyBlocking = 2;  // the API call waited for the copy

// sync.type: 1..4 are CUPTI's CUpti_ActivitySynchronizationType values.
enum class SyncType : uint8_t {
  kUnknown = 0, kEventSynchronize = 1, kStreamWaitEvent = 2, kStreamSynchronize = 3,
  kContextSynchronize = 4, kBarrier = 5, kMarker = 6, kWaitEvents = 7,
};

// memory.operation
enum class MemoryOp : uint8_t { kAllocate = 1, kFree = 2 };

}  // namespace strata::format
