// The CUDA collector (libstrata_cupti.so), injected into unmodified CUDA
// programs: `strata record` sets CUDA_INJECTION64_PATH to this library, and the
// CUDA driver, during the process's first cuInit, loads it and calls
// InitializeInjection (injection.cc). No CUDA call is made from there: only
// CUPTI calls. Without a driver the library is never loaded, and the manifest
// says so.
//
// What it records, all on the trace clock (CUPTI's timestamps are CLOCK_MONOTONIC
// through cuptiActivityRegisterTimestampCallback):
//  - runtime and driver API calls through the Callback API, on the calling
//    thread as they happen: api_begin/api_end with CUPTI's correlation id, and
//    the arguments that matter (kernel name, grid/block, shared memory; bytes
//    and direction of copies; bytes of fills and allocations). Driver calls
//    made inside a runtime call are left out (the runtime call stands for them);
//    driver calls made directly (Triton, JAX) are recorded.
//  - device activity through the Activity API's asynchronous buffers: concurrent
//    kernels, memcpy (every kind, peer to peer), memset, synchronization, memory
//    allocation/free, CUPTI overhead, device descriptions; decoded
//    (ActivityDecoder) into the device streams of format/schema_accel.h with the
//    same correlation ids.
//  - NVTX ranges and marks (frameworks' annotations) through the NVTX callback
//    domain, which CUPTI serves when it is the NVTX injection:
//    NVTX_INJECTION64_PATH names this library, which forwards to CUPTI.
//    push/pop become spans of the calling thread, start/end ranges become
//    ranges that may end on another thread, marks become instants.
//  - records CUPTI dropped (no buffer available) as a loss total, and what
//    could not be recorded in the collector status.
//  - optionally (--gpu-metrics), per-kernel hardware metrics for a window of
//    kernels or steps through CUPTI's range profiler (range_profiler.h).
//
// When the callback API is taken by another CUPTI client (one subscriber per
// process), API calls and NVTX come from activity records instead (RUNTIME,
// DRIVER, MARKER kinds), placed on their threads after the fact.
#pragma once

#include <cupti.h>

#include <atomic>
#include <bit>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "collectors/accel/emit.h"

namespace strata::cupti {

// Names (kernels, NVTX messages) interned once each per cache: CUPTI's name
// pointers are not guaranteed to outlive their buffer, and a module loaded
// where another was unloaded can reuse an address, so a slot keyed by pointer
// checks the text too. Not thread-safe: one cache per thread.
class NameCache {
 public:
  // `slots` is rounded up to a power of two (a mask, not a division, per lookup).
  explicit NameCache(size_t slots = 4096) : slots_(std::bit_ceil(slots)), mask_(slots_.size() - 1) {}
  // `demangle`: turn an Itanium-mangled C++ name into its readable form first.
  uint32_t Get(const char* name, bool demangle);
  // The records of one CUPTI buffer are decoded while every name they point to
  // is alive, so within it one address is one name: after BeginBuffer() an
  // entry's text is compared once per buffer instead of once per record.
  // Without it (callback-side caches: NVTX messages may live on the caller's
  // stack) every hit is compared.
  void BeginBuffer() { ++generation_; }

 private:
  struct Entry {
    const char* ptr = nullptr;
    uint64_t verified = 0;  // the buffer generation whose records were checked against `text`
    std::string text;       // with its terminating NUL, compared in one memcmp
    uint32_t id = 0;
  };
  std::vector<Entry> slots_;  // direct-mapped by pointer
  size_t mask_;
  uint64_t generation_ = 0;  // 0: no buffer, compare every time
};

// CUPTI's thread ids (the low 32 bits of pthread_self) -> kernel thread ids,
// learned from the threads' callbacks; used to place activity records.
class ThreadMap {
 public:
  void Learn(uint32_t cupti_tid, uint32_t tid);
  // The thread's id, or the process id (its main thread) when unknown.
  uint32_t Find(uint32_t cupti_tid);
  static uint32_t CuptiThreadId();  // this thread's id as CUPTI reports it

 private:
  std::mutex mu_;
  std::unordered_map<uint32_t, uint32_t> map_;
};

struct DecoderStats {
  uint64_t records = 0;
  uint64_t kernels = 0, copies = 0, fills = 0, syncs = 0, memory = 0, api = 0, overhead = 0, markers = 0, devices = 0;
  uint64_t untimed = 0;   // kernels CUPTI could not time (start = end = 0)
  uint64_t unknown = 0;   // kinds this collector does not decode
  uint64_t buffers = 0;
  uint64_t dropped = 0;   // records CUPTI dropped, total
};

// Turns CUPTI activity records into strata device events. One instance per
// process; buffers may complete on several threads (CUPTI's worker, a thread
// calling cuptiActivityFlushAll), so decoding is serialized by a mutex that is
// never held while calling back into CUPTI.
class ActivityDecoder {
 public:
  explicit ActivityDecoder(ThreadMap* threads);
  // Every record of a completed buffer, through cuptiActivityGetNextRecord.
  void DecodeBuffer(uint8_t* buffer, size_t valid_bytes);
  // One record (a CUpti_Activity* of the version strata was built against).
  void Decode(const CUpti_Activity* record);
  // CUPTI's count of dropped records since the last call (from
  // cuptiActivityGetNumDroppedRecords): added to the reported total.
  void AddDropped(uint64_t n);
  // Timestamps not on CLOCK_MONOTONIC (the timestamp callback was refused):
  // this offset is added to every CUPTI timestamp.
  void set_time_offset(int64_t ns) { time_offset_ = ns; }
  // Benchmarks: decode without emitting.
  void set_emit(bool on) { emit_ = on; }
  // Called with the correlation id of every device record (kernel, copy,
  // memset) decoded, under the decoder's lock: the activity window's attribution.
  using RecordHook = void (*)(uint32_t correlation, void* arg);
  void set_record_hook(RecordHook h, void* arg) {
    record_hook_ = h;
    record_hook_arg_ = arg;
  }
  DecoderStats stats();

 private:
  // A device queue's stream and its route, opened at its first record.
  accel::Queue Stream(uint32_t device, uint64_t queue, const char* what);
  recorder::ExternalStream* ThreadStream(uint32_t cupti_tid);
  uint32_t DeviceOfContext(uint32_t context);
  uint64_t T(uint64_t cupti_ts) const { return cupti_ts ? static_cast<uint64_t>(static_cast<int64_t>(cupti_ts) + time_offset_) : 0; }
  void DecodeLocked(const CUpti_Activity* r);
  // The fields CUPTI's memcpy records (device and peer-to-peer) share; the
  // caller sets the devices.
  template <class MemcpyRecord>
  accel::CopyActivity CopyOf(const MemcpyRecord* m) const;

  std::mutex mu_;
  ThreadMap* threads_;
  NameCache names_;
  std::unordered_map<uint64_t, accel::Queue> streams_;
  std::unordered_map<uint32_t, recorder::ExternalStream*> thread_streams_;
  std::unordered_map<uint32_t, uint32_t> context_device_;
  uint32_t last_context_ = UINT32_MAX;
  // Records of a buffer come from a handful of streams: a small cache in front of the map.
  struct StreamSlot {
    uint64_t key = UINT64_MAX;
    accel::Queue queue;
  };
  StreamSlot recent_[8];
  uint32_t next_slot_ = 0;
  int64_t time_offset_ = 0;
  bool emit_ = true;
  RecordHook record_hook_ = nullptr;
  void* record_hook_arg_ = nullptr;
  DecoderStats stats_;
};

// The Callback API side: runtime/driver calls, NVTX, resources.
class CallbackHandler {
 public:
  explicit CallbackHandler(ThreadMap* threads);
  // Builds the per-cbid name and argument tables (CUPTI calls that work
  // without a driver) and says which callbacks to enable: `all` every runtime
  // and driver call, else the ones worth a record.
  void Init(bool all);
  bool WantRuntime(uint32_t cbid) const;
  bool WantDriver(uint32_t cbid) const;
  // The CUpti_CallbackFunc body.
  void OnCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);
  // Called for every kernel launch (ENTER), with its correlation id: the
  // range profiler's window counter.
  using LaunchHook = void (*)(uint32_t correlation, void* arg);
  void set_launch_hook(LaunchHook h, void* arg) {
    launch_hook_ = h;
    launch_hook_arg_ = arg;
  }
  uint64_t api_calls() const { return api_calls_.load(std::memory_order_relaxed); }

  enum class ArgKind : uint8_t {
    kNone, kBlocked, kLaunchRuntime, kLaunchRuntimeEx, kLaunchDriver, kLaunchDriverEx, kCopyRuntime, kCopyDriver,
    kFillRuntime, kAllocRuntime, kAllocDriver,
  };

 private:
  struct Api {
    uint32_t name = 0;
    ArgKind args = ArgKind::kNone;
    accel::CopyKind copy = accel::CopyKind::kUnknown;  // driver copies: from the name
  };
  void OnApi(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* cb);
  void OnNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData* d);
  void OnResource(CUpti_CallbackId cbid, const CUpti_ResourceData* d);
  void Args(const Api& api, const CUpti_CallbackData* cb);

  ThreadMap* threads_;
  Api runtime_[CUPTI_RUNTIME_TRACE_CBID_SIZE];
  Api driver_[CUPTI_DRIVER_TRACE_CBID_SIZE];
  std::mutex registered_mu_;
  std::unordered_map<uint64_t, uint32_t> registered_strings_;  // nvtxStringHandle_t -> interned
  std::atomic<uint64_t> api_calls_{0};
  LaunchHook launch_hook_ = nullptr;
  void* launch_hook_arg_ = nullptr;
  uint32_t k_bytes_ = 0, k_kind_ = 0, k_size_ = 0, k_value_ = 0;
};

// "cudaLaunchKernel_ptsz_v7000" -> "cudaLaunchKernel": the API as users know it.
std::string ApiBaseName(const char* cupti_callback_name);
// The CUDA memcpy kinds as strata's (format::CopyKind).
accel::CopyKind CopyKindOf(uint8_t cupti_memcpy_kind);
// CUDA-core peak FLOP/s of a device (not tensor cores): f64, f32, f16; 0 when
// the compute capability is not in strata's table.
void PeakFlops(uint32_t cc_major, uint32_t cc_minor, uint32_t sms, uint32_t clock_khz, double* f64, double* f32,
               double* f16);

}  // namespace strata::cupti
