// Internal to libstrata_opencl.so (design: tracer.h): the layer's state and
// the machinery every wrapper shares -- the API names, devices and their
// clocks, queues, kernels, the path of an enqueued command to its completion
// callback, and buffer allocations. layer_state.cc holds their definitions,
// layer.cc the wrapped entry points and the layer's lifecycle.
#pragma once


#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_0_APIS
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_2_0_APIS
#include <CL/cl_layer.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collectors/accel/emit.h"
#include "format/schema_accel.h"
#include "recorder/runtime.h"

namespace strata::opencl::layer {

using accel::CopyKind;
using accel::MemoryKind;
using accel::SyncType;

// --- API names -------------------------------------------------------------------

#define STRATA_CL_APIS(X)                                                                                   \
  X(clCreateContext) X(clCreateContextFromType) X(clCreateCommandQueue) X(clCreateCommandQueueWithProperties) \
  X(clReleaseCommandQueue) X(clCreateBuffer) X(clCreateBufferWithProperties) X(clCreateSubBuffer)           \
  X(clCreateImage) X(clCreateImageWithProperties) X(clRetainMemObject) X(clReleaseMemObject) X(clSVMAlloc)  \
  X(clSVMFree)                                                                                              \
  X(clCreateProgramWithSource) X(clCreateProgramWithBinary) X(clCreateProgramWithIL) X(clBuildProgram)      \
  X(clCompileProgram) X(clLinkProgram) X(clCreateKernel) X(clCreateKernelsInProgram) X(clCloneKernel)       \
  X(clWaitForEvents) X(clFlush) X(clFinish) X(clEnqueueNDRangeKernel) X(clEnqueueTask)                      \
  X(clEnqueueNativeKernel) X(clEnqueueReadBuffer) X(clEnqueueWriteBuffer) X(clEnqueueCopyBuffer)           \
  X(clEnqueueReadBufferRect) X(clEnqueueWriteBufferRect) X(clEnqueueCopyBufferRect) X(clEnqueueFillBuffer)  \
  X(clEnqueueReadImage) X(clEnqueueWriteImage) X(clEnqueueCopyImage) X(clEnqueueFillImage)                  \
  X(clEnqueueCopyImageToBuffer) X(clEnqueueCopyBufferToImage) X(clEnqueueMapBuffer) X(clEnqueueMapImage)    \
  X(clEnqueueUnmapMemObject) X(clEnqueueMigrateMemObjects) X(clEnqueueMarker) X(clEnqueueMarkerWithWaitList) \
  X(clEnqueueBarrier) X(clEnqueueBarrierWithWaitList) X(clEnqueueWaitForEvents) X(clEnqueueSVMFree)        \
  X(clEnqueueSVMMemcpy) X(clEnqueueSVMMemFill) X(clEnqueueSVMMap) X(clEnqueueSVMUnmap)                     \
  X(clEnqueueSVMMigrateMem)

enum Api : uint32_t {
#define STRATA_CL_ENUM(n) k_##n,
  STRATA_CL_APIS(STRATA_CL_ENUM)
#undef STRATA_CL_ENUM
      kApiCount
};
inline constexpr const char* kApiNames[] = {
#define STRATA_CL_NAME(n) #n,
    STRATA_CL_APIS(STRATA_CL_NAME)
#undef STRATA_CL_NAME
};

// --- global state ------------------------------------------------------------------

extern const cl_icd_dispatch* g_next;  // the dispatch below us: the next layer or the loader
extern cl_icd_dispatch g_table;        // ours: NULL entries fall through to g_next
extern std::atomic<bool> g_on;         // false until clInitLayer, and in forked children
extern std::atomic<uint64_t> g_correlation;
extern uint32_t g_api_name[kApiCount];
extern uint32_t g_key_bytes, g_key_size, g_key_blocking, g_key_queue;
extern uint32_t g_name_map, g_name_unmap, g_name_migrate, g_name_native, g_name_svm_free;

// Enqueueing threads and the driver's callback threads each write their own
// cache line: a counter both sides update would bounce between cores per command.
struct Counters {
  alignas(64) std::atomic<uint64_t> commands{0}, tracked{0}, untracked{0}, unprofiled_queues{0};  // enqueue side
  alignas(64) std::atomic<uint64_t> finished{0}, completed{0}, aborted{0}, unprofiled{0};          // callbacks
  alignas(64) std::atomic<uint64_t> forced_queues{0}, unaligned_devices{0};                         // cold
  // Enqueues whose device activity was not asked for (the control block's
  // device-activity windows: --cuda-activity sampled/window/off): API call only.
  alignas(64) std::atomic<uint64_t> outside_windows{0};
  uint64_t InFlight() const {
    uint64_t done = finished.load(std::memory_order_acquire);
    uint64_t started = tracked.load(std::memory_order_acquire);
    return started > done ? started - done : 0;
  }
};
extern Counters g_stats;

uint64_t MonoNow();

inline bool On() { return g_on.load(std::memory_order_relaxed); }

// Device activity in windows of steps, as the CUDA collector's
// (collectors/cupti/activity_window.h), decided per enqueue: the control
// block says which steps want it (format::CudaActivityWanted). Outside a
// window an enqueue is the API call alone: no event, no completion callback,
// no profiling query -- the cost of device activity on OpenCL. Between two
// steps the last step's decision holds.
bool ActivityWanted();

// Cold-path registries (queues, kernels, devices, buffers) share one mutex; the
// per-command path reads them through thread-local caches validated by a
// generation number, and the completion callback never touches them.
extern std::mutex g_mu;

// --- devices and their clocks --------------------------------------------------------

enum class DevClock : int { kUndecided, kMonotonic, kMonotonicRaw, kBoottime, kRealtime, kOffset };

extern accel::ClockMapper* g_raw_clock;
extern accel::ClockMapper* g_boot_clock;
extern accel::ClockMapper* g_real_clock;

struct DeviceRec {
  cl_device_id id = nullptr;
  uint32_t number = 0;
  std::atomic<int> clock{static_cast<int>(DevClock::kUndecided)};
  std::atomic<int64_t> offset{0};  // kOffset only
  recorder::ExternalStream* memory_stream = nullptr;  // allocations (queue 0)
};
extern std::vector<DeviceRec*> g_devices;  // under g_mu

template <typename T>
T DeviceInfoValue(cl_device_id d, cl_device_info what) {
  T v{};
  if (g_next->clGetDeviceInfo(d, what, sizeof v, &v, nullptr) != CL_SUCCESS) return T{};
  return v;
}

std::string DeviceInfoString(cl_device_id d, cl_device_info what);
std::string PlatformName(cl_device_id d);
// Registers a device on first use and describes it in the trace. Cold path.
DeviceRec* Device(cl_device_id d);
// The device of a context (the first, when it has several).
DeviceRec* ContextDevice(cl_context ctx);

// Maps a device timestamp to the trace clock. `host_begin` is CLOCK_MONOTONIC
// taken before the command was enqueued, `now` when it completed; the command's
// QUEUED time lies between them on whichever clock the device uses.
uint64_t ToTrace(DeviceRec* d, uint64_t t, uint64_t queued, uint64_t host_begin, uint64_t now);

// --- queues ------------------------------------------------------------------------------

struct QueueRec {
  DeviceRec* device = nullptr;
  uint64_t id = 0;
  recorder::ExternalStream* stream = nullptr;
  bool forced = false;      // profiling switched on by us
  bool profiled = false;
  std::vector<cl_queue_properties> app_props;  // as the program passed them (0-terminated), for *_PROPERTIES_ARRAY
};
extern std::unordered_map<cl_command_queue, QueueRec*> g_queues;  // under g_mu
extern std::atomic<uint64_t> g_queue_gen;

QueueRec* RegisterQueue(cl_command_queue q, cl_device_id dev, bool forced, bool profiled,
                        std::vector<cl_queue_properties> app_props, bool out_of_order);

// A queue the program created through a path we do not wrap (an extension
// entry point): registered as found, timed only if it happens to be profiled.
QueueRec* AdoptQueue(cl_command_queue q);
// The queue's record (through a thread-local cache), adopted if unknown.
QueueRec* FindQueue(cl_command_queue q);

// --- kernels -------------------------------------------------------------------------------

// Names a kernel (at its creation; a reused handle now means this kernel).
void RememberKernel(cl_kernel k);
// The kernel's interned name (through a thread-local cache).
uint32_t KernelName(cl_kernel k);

// --- commands ------------------------------------------------------------------------------

enum class Cmd : uint8_t { kKernel, kCopy, kFill, kSync, kCommand };

// What the completion callback needs; owned by the callback once registered.
struct Pending {
  Cmd cmd = Cmd::kCommand;
  CopyKind copy_kind = CopyKind::kUnknown;
  SyncType sync = SyncType::kUnknown;
  uint8_t copy_flags = 0;
  QueueRec* queue = nullptr;
  uint64_t correlation = 0;
  uint64_t host_begin = 0;
  uint32_t name = 0;
  uint64_t bytes = 0;
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
};

// Pendings are allocated on the enqueueing thread and freed on the driver's
// callback threads: the worst pattern for malloc (every allocation misses the
// thread cache and takes the arena lock). A fixed pool with a lock-free free
// list instead; a tagged head index avoids ABA. Beyond the pool: plain new.
class PendingPool {
 public:
  static constexpr uint32_t kSize = 1u << 16;
  PendingPool() : slots_(new Slot[kSize]) {
    for (uint32_t i = 0; i < kSize; ++i) slots_[i].next = i + 1;
    head_.store(Pack(0, 0), std::memory_order_relaxed);
  }
  Pending* Get() {
    uint64_t h = head_.load(std::memory_order_acquire);
    for (;;) {
      uint32_t i = Index(h);
      if (i >= kSize) return new Pending();
      uint64_t next = Pack(slots_[i].next.load(std::memory_order_relaxed), Tag(h) + 1);
      if (head_.compare_exchange_weak(h, next, std::memory_order_acq_rel, std::memory_order_acquire)) {
        slots_[i].p = Pending();
        return &slots_[i].p;
      }
    }
  }
  void Put(Pending* p) {
    auto* s = reinterpret_cast<Slot*>(p);
    if (s < slots_ || s >= slots_ + kSize) {
      delete p;
      return;
    }
    auto i = static_cast<uint32_t>(s - slots_);
    uint64_t h = head_.load(std::memory_order_relaxed);
    for (;;) {
      s->next.store(Index(h), std::memory_order_relaxed);
      if (head_.compare_exchange_weak(h, Pack(i, Tag(h) + 1), std::memory_order_release, std::memory_order_relaxed))
        return;
    }
  }

 private:
  struct Slot {
    Pending p;  // first member: a Pending* is its Slot*
    std::atomic<uint32_t> next{0};
  };
  static uint64_t Pack(uint32_t index, uint32_t tag) { return (uint64_t{tag} << 32) | index; }
  static uint32_t Index(uint64_t h) { return static_cast<uint32_t>(h); }
  static uint32_t Tag(uint64_t h) { return static_cast<uint32_t>(h >> 32); }
  Slot* slots_;
  std::atomic<uint64_t> head_;
};
extern PendingPool* g_pool;

// Attaches completion tracking to a command the driver accepted. `ev` is ours
// (one reference), whether or not the program also asked for it.
void Track(Pending* p, cl_event ev);

// The API call on the calling thread around `call`.
template <typename R, typename F>
R ApiCall(Api api, F&& call) {
  if (!On()) return call();
  accel::ApiBegin(g_api_name[api], accel::ApiDomain::kRuntime, g_correlation.fetch_add(1, std::memory_order_relaxed) + 1);
  R r = call();
  if constexpr (std::is_pointer_v<R>) accel::ApiEnd(r ? 0 : -1);
  else accel::ApiEnd(static_cast<int64_t>(r));
  return r;
}

// An enqueue: the API call, its arguments (`args` runs inside the call's slice),
// and the device activity of the command it creates.
template <typename Args, typename Call>
cl_int Enqueue(Api api, cl_command_queue q, cl_event* app_event, Pending proto, Args&& args, Call&& call) {
  if (!On()) return call(app_event);
  if (!ActivityWanted()) {
    g_stats.outside_windows.fetch_add(1, std::memory_order_relaxed);
    uint64_t corr = g_correlation.fetch_add(1, std::memory_order_relaxed) + 1;
    accel::ApiBegin(g_api_name[api], accel::ApiDomain::kRuntime, corr);
    args(corr, FindQueue(q));
    cl_int rc = call(app_event);
    accel::ApiEnd(rc);
    return rc;
  }
  QueueRec* qr = FindQueue(q);
  uint64_t corr = g_correlation.fetch_add(1, std::memory_order_relaxed) + 1;
  // The host time only matters until the device's clock is known.
  uint64_t begin = qr && qr->device->clock.load(std::memory_order_relaxed) == static_cast<int>(DevClock::kUndecided)
                       ? MonoNow()
                       : 0;
  accel::ApiBegin(g_api_name[api], accel::ApiDomain::kRuntime, corr);
  args(corr, qr);
  cl_event ev = nullptr;
  cl_int rc = call(&ev);
  if (rc == CL_SUCCESS && ev) {
    if (app_event) {
      *app_event = ev;
      g_next->clRetainEvent(ev);  // the program may release its reference right away
    }
    if (qr) {
      Pending* p = g_pool->Get();
      *p = proto;
      p->queue = qr;
      p->correlation = corr;
      p->host_begin = begin;
      Track(p, ev);
    } else {
      g_stats.untracked.fetch_add(1, std::memory_order_relaxed);
      g_next->clReleaseEvent(ev);
    }
  } else if (app_event) {
    *app_event = ev;
  }
  accel::ApiEnd(rc);
  return rc;
}

inline void NoArgs(uint64_t, QueueRec*) {}

inline auto BytesArg(uint64_t bytes, bool blocking = false) {
  return [bytes, blocking](uint64_t, QueueRec*) {
    accel::ApiArg(g_key_bytes, bytes);
    // The call returns only when the command has completed.
    if (blocking) accel::ApiArg(g_key_blocking, 1);
  };
}

Pending CopyProto(CopyKind kind, uint64_t bytes, bool blocking);
Pending CommandProto(uint32_t name, uint64_t bytes);
Pending SyncProto(SyncType t);

inline uint64_t Volume(const size_t* region) { return region ? uint64_t{region[0]} * region[1] * region[2] : 0; }
uint64_t ImageBytes(cl_mem image, const size_t* region);

// --- allocations ---------------------------------------------------------------------------


// The program's own reference count of a buffer (the driver's count includes
// references of its own: kernels holding their arguments, pending commands).
// When the program drops its last reference, the buffer is gone for it now.
void RetainingMemObject(cl_mem m);
void ReleasingMemObject(cl_mem m);
// A buffer or image the program created: its allocation, and its free at the
// program's last release (or at its destruction).
void RecordAllocation(cl_context ctx, cl_mem m, uint64_t bytes);

extern std::mutex g_svm_mu;
extern std::unordered_map<void*, std::pair<recorder::ExternalStream*, uint64_t>> g_svm;  // under g_svm_mu
extern std::mutex g_map_mu;
extern std::unordered_map<void*, uint64_t> g_mapped;  // mapped pointer -> bytes, under g_map_mu

}  // namespace strata::opencl::layer
