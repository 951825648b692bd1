// libstrata_opencl.so: the OpenCL ICD-loader layer (design: tracer.h).
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_0_APIS
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_2_0_APIS
#include <CL/cl_layer.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "collectors/accel/emit.h"
#include "collectors/opencl/tracer.h"
#include "format/schema_accel.h"
#include "recorder/runtime.h"

namespace strata::opencl {
namespace {

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
constexpr const char* kApiNames[] = {
#define STRATA_CL_NAME(n) #n,
    STRATA_CL_APIS(STRATA_CL_NAME)
#undef STRATA_CL_NAME
};

// --- global state ------------------------------------------------------------------

const cl_icd_dispatch* g_next = nullptr;  // the dispatch below us: the next layer or the loader
cl_icd_dispatch g_table;                  // ours: NULL entries fall through to g_next
std::atomic<bool> g_on{false};            // false until clInitLayer, and in forked children
std::atomic<uint64_t> g_correlation{0};
uint32_t g_api_name[kApiCount];
uint32_t g_key_bytes, g_key_size, g_key_blocking, g_key_queue;
uint32_t g_name_map, g_name_unmap, g_name_migrate, g_name_native, g_name_svm_free;

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
} g_stats;

uint64_t MonoNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

bool On() { return g_on.load(std::memory_order_relaxed); }

// Device activity in windows of steps, as the CUDA collector's
// (collectors/cupti/activity_window.h), decided per enqueue: the control
// block says which steps want it (format::CudaActivityWanted). Outside a
// window an enqueue is the API call alone: no event, no completion callback,
// no profiling query -- the cost of device activity on OpenCL. Between two
// steps the last step's decision holds.
std::atomic<int64_t> g_last_step{-1};
bool ActivityWanted() {
  const format::ControlBlock* cb = recorder::Control();
  if (cb == nullptr ||
      cb->cuda_activity.load(std::memory_order_relaxed) == static_cast<uint32_t>(format::CudaActivity::kAll))
    return true;
  uint64_t cur = recorder::CurrentStep();
  int64_t step = cur == UINT64_MAX ? g_last_step.load(std::memory_order_relaxed) : static_cast<int64_t>(cur);
  if (cur != UINT64_MAX) g_last_step.store(step, std::memory_order_relaxed);
  return format::CudaActivityWanted(*cb, step);
}

// Cold-path registries (queues, kernels, devices, buffers) share one mutex; the
// per-command path reads them through thread-local caches validated by a
// generation number, and the completion callback never touches them.
std::mutex g_mu;

// --- devices and their clocks --------------------------------------------------------

enum class DevClock : int { kUndecided, kMonotonic, kMonotonicRaw, kBoottime, kRealtime, kOffset };

accel::ClockMapper* g_raw_clock = nullptr;
accel::ClockMapper* g_boot_clock = nullptr;
accel::ClockMapper* g_real_clock = nullptr;

struct DeviceRec {
  cl_device_id id = nullptr;
  uint32_t number = 0;
  std::atomic<int> clock{static_cast<int>(DevClock::kUndecided)};
  std::atomic<int64_t> offset{0};  // kOffset only
  recorder::ExternalStream* memory_stream = nullptr;  // allocations (queue 0)
};
std::vector<DeviceRec*> g_devices;  // under g_mu

template <typename T>
T DeviceInfoValue(cl_device_id d, cl_device_info what) {
  T v{};
  if (g_next->clGetDeviceInfo(d, what, sizeof v, &v, nullptr) != CL_SUCCESS) return T{};
  return v;
}

std::string DeviceInfoString(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (g_next->clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  if (g_next->clGetDeviceInfo(d, what, n, s.data(), nullptr) != CL_SUCCESS) return "";
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string PlatformName(cl_device_id d) {
  cl_platform_id p = DeviceInfoValue<cl_platform_id>(d, CL_DEVICE_PLATFORM);
  if (!p) return "";
  size_t n = 0;
  if (g_next->clGetPlatformInfo(p, CL_PLATFORM_NAME, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  if (g_next->clGetPlatformInfo(p, CL_PLATFORM_NAME, n, s.data(), nullptr) != CL_SUCCESS) return "";
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

// Registers a device on first use and describes it in the trace. Cold path.
DeviceRec* Device(cl_device_id d) {
  std::lock_guard<std::mutex> lk(g_mu);
  for (DeviceRec* r : g_devices)
    if (r->id == d) return r;
  auto* r = new DeviceRec();
  r->id = d;
  r->number = format::kOpenClDeviceBase + static_cast<uint32_t>(g_devices.size());
  std::string platform = PlatformName(d);
  // PoCL's host devices stamp commands with CLOCK_MONOTONIC_RAW (pocl_gettimemono_ns).
  if (platform == "Portable Computing Language") r->clock.store(static_cast<int>(DevClock::kMonotonicRaw));
  g_devices.push_back(r);
  r->memory_stream = recorder::OpenDeviceStream(r->number, 0);
  accel::EmitQueueInfo(r->number, 0, "OpenCL allocations");

  accel::DeviceInfo info;
  info.device = r->number;
  info.api = "opencl";
  info.name = DeviceInfoString(d, CL_DEVICE_NAME);
  info.vendor = DeviceInfoString(d, CL_DEVICE_VENDOR);
  info.compute_units = DeviceInfoValue<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS);
  info.clock_khz = DeviceInfoValue<cl_uint>(d, CL_DEVICE_MAX_CLOCK_FREQUENCY) * 1000u;
  info.memory_bytes = DeviceInfoValue<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE);
  cl_device_type type = DeviceInfoValue<cl_device_type>(d, CL_DEVICE_TYPE);
  const char* type_name = (type & CL_DEVICE_TYPE_GPU) ? "GPU" : (type & CL_DEVICE_TYPE_CPU) ? "CPU"
                          : (type & CL_DEVICE_TYPE_ACCELERATOR) ? "accelerator" : "other";
  info.properties = std::string("type ") + type_name + "; platform " + platform + "; " +
                    DeviceInfoString(d, CL_DEVICE_VERSION) + "; driver " + DeviceInfoString(d, CL_DRIVER_VERSION) +
                    "; max work-group " + std::to_string(DeviceInfoValue<size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE)) +
                    "; local memory " + std::to_string(DeviceInfoValue<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE)) + " B";
  accel::EmitDeviceInfo(info);
  return r;
}

DeviceRec* ContextDevice(cl_context ctx) {
  cl_device_id dev = nullptr;
  if (!ctx || g_next->clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof dev, &dev, nullptr) != CL_SUCCESS) {
    // More than one device: the first one stands for the context's memory.
    size_t n = 0;
    if (!ctx || g_next->clGetContextInfo(ctx, CL_CONTEXT_DEVICES, 0, nullptr, &n) != CL_SUCCESS || n < sizeof dev)
      return nullptr;
    std::vector<cl_device_id> all(n / sizeof dev);
    if (g_next->clGetContextInfo(ctx, CL_CONTEXT_DEVICES, n, all.data(), nullptr) != CL_SUCCESS) return nullptr;
    dev = all[0];
  }
  return Device(dev);
}

// Maps a device timestamp to the trace clock. `host_begin` is CLOCK_MONOTONIC
// taken before the command was enqueued, `now` when it completed; the command's
// QUEUED time lies between them on whichever clock the device uses.
uint64_t ToTrace(DeviceRec* d, uint64_t t, uint64_t queued, uint64_t host_begin, uint64_t now) {
  auto mode = static_cast<DevClock>(d->clock.load(std::memory_order_acquire));
  if (mode == DevClock::kUndecided) {
    struct Candidate {
      DevClock mode;
      accel::ClockMapper* mapper;
    } cands[] = {{DevClock::kMonotonicRaw, g_raw_clock}, {DevClock::kMonotonic, nullptr},
                 {DevClock::kBoottime, g_boot_clock}, {DevClock::kRealtime, g_real_clock}};
    DevClock chosen = DevClock::kOffset;
    constexpr int64_t kSlack = 50'000;  // the offsets' own measurement error, with margin
    for (const Candidate& c : cands) {
      int64_t q = static_cast<int64_t>(queued) + (c.mapper ? c.mapper->offset() : 0);
      if (q >= static_cast<int64_t>(host_begin) - kSlack && q <= static_cast<int64_t>(now) + kSlack) {
        chosen = c.mode;
        break;
      }
    }
    if (chosen == DevClock::kOffset) {
      d->offset.store(static_cast<int64_t>(host_begin) - static_cast<int64_t>(queued), std::memory_order_relaxed);
      g_stats.unaligned_devices.fetch_add(1, std::memory_order_relaxed);
    }
    int expected = static_cast<int>(DevClock::kUndecided);
    d->clock.compare_exchange_strong(expected, static_cast<int>(chosen), std::memory_order_acq_rel);
    mode = static_cast<DevClock>(d->clock.load(std::memory_order_acquire));
  }
  switch (mode) {
    case DevClock::kMonotonicRaw: return g_raw_clock->ToTrace(t);
    case DevClock::kBoottime: return g_boot_clock->ToTrace(t);
    case DevClock::kRealtime: return g_real_clock->ToTrace(t);
    case DevClock::kOffset: return static_cast<uint64_t>(static_cast<int64_t>(t) + d->offset.load(std::memory_order_relaxed));
    case DevClock::kMonotonic:
    case DevClock::kUndecided: break;
  }
  return t;
}

// --- queues ------------------------------------------------------------------------------

struct QueueRec {
  DeviceRec* device = nullptr;
  uint64_t id = 0;
  recorder::ExternalStream* stream = nullptr;
  bool forced = false;      // profiling switched on by us
  bool profiled = false;
  std::vector<cl_queue_properties> app_props;  // as the program passed them (0-terminated), for *_PROPERTIES_ARRAY
};
std::unordered_map<cl_command_queue, QueueRec*> g_queues;  // under g_mu
std::atomic<uint64_t> g_queue_gen{1};
uint64_t g_next_queue_id = 1;  // under g_mu; 0 is the allocations pseudo-queue

struct QueueCache {
  cl_command_queue q = nullptr;
  uint64_t gen = 0;
  QueueRec* rec = nullptr;
};
thread_local QueueCache t_queue;

QueueRec* RegisterQueue(cl_command_queue q, cl_device_id dev, bool forced, bool profiled,
                        std::vector<cl_queue_properties> app_props, bool out_of_order) {
  DeviceRec* d = Device(dev);
  auto* r = new QueueRec();
  r->device = d;
  r->forced = forced;
  r->profiled = profiled;
  r->app_props = std::move(app_props);
  {
    std::lock_guard<std::mutex> lk(g_mu);
    r->id = g_next_queue_id++;
    g_queues[q] = r;  // a reused handle now means this queue
    g_queue_gen.fetch_add(1, std::memory_order_release);
  }
  r->stream = recorder::OpenDeviceStream(d->number, r->id);
  recorder::SetReorderWindow(r->stream, out_of_order ? 500'000'000 : 200'000'000);
  accel::EmitQueueInfo(d->number, r->id,
                       "OpenCL queue " + std::to_string(r->id) + (out_of_order ? " (out-of-order)" : ""));
  if (forced) g_stats.forced_queues.fetch_add(1, std::memory_order_relaxed);
  return r;
}

// A queue the program created through a path we do not wrap (an extension
// entry point): registered as found, timed only if it happens to be profiled.
QueueRec* AdoptQueue(cl_command_queue q) {
  cl_device_id dev = nullptr;
  cl_command_queue_properties props = 0;
  if (g_next->clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof dev, &dev, nullptr) != CL_SUCCESS || !dev) return nullptr;
  g_next->clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof props, &props, nullptr);
  return RegisterQueue(q, dev, false, (props & CL_QUEUE_PROFILING_ENABLE) != 0, {},
                       (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0);
}

QueueRec* FindQueue(cl_command_queue q) {
  uint64_t gen = g_queue_gen.load(std::memory_order_acquire);
  if (t_queue.q == q && t_queue.gen == gen) return t_queue.rec;
  QueueRec* rec = nullptr;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_queues.find(q);
    if (it != g_queues.end()) rec = it->second;
  }
  if (!rec) rec = AdoptQueue(q);
  t_queue = {q, g_queue_gen.load(std::memory_order_acquire), rec};
  return rec;
}

// --- kernels -------------------------------------------------------------------------------

std::unordered_map<cl_kernel, uint32_t> g_kernels;  // under g_mu: kernel -> interned name
std::atomic<uint64_t> g_kernel_gen{1};
struct KernelCache {
  cl_kernel k = nullptr;
  uint64_t gen = 0;
  uint32_t name = 0;
};
thread_local KernelCache t_kernel;

uint32_t QueryKernelName(cl_kernel k) {
  char buf[512] = {0};
  size_t n = 0;
  if (g_next->clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof buf - 1, buf, &n) != CL_SUCCESS) return recorder::Intern("<unknown kernel>");
  return recorder::Intern(buf);
}

void RememberKernel(cl_kernel k) {
  if (!k) return;
  uint32_t name = QueryKernelName(k);
  std::lock_guard<std::mutex> lk(g_mu);
  g_kernels[k] = name;  // a reused handle now means this kernel
  g_kernel_gen.fetch_add(1, std::memory_order_release);
}

uint32_t KernelName(cl_kernel k) {
  uint64_t gen = g_kernel_gen.load(std::memory_order_acquire);
  if (t_kernel.k == k && t_kernel.gen == gen) return t_kernel.name;
  uint32_t name = 0;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_kernels.find(k);
    if (it != g_kernels.end()) name = it->second;
  }
  if (!name) {
    name = QueryKernelName(k);
    std::lock_guard<std::mutex> lk(g_mu);
    g_kernels[k] = name;
  }
  t_kernel = {k, gen, name};
  return name;
}

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
PendingPool* g_pool = nullptr;

void CL_CALLBACK OnComplete(cl_event ev, cl_int status, void* user) {
  auto* p = static_cast<Pending*>(user);
  if (status < 0) {
    g_stats.aborted.fetch_add(1, std::memory_order_relaxed);
  } else {
    cl_ulong t[4] = {0, 0, 0, 0};
    const cl_profiling_info what[4] = {CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_SUBMIT,
                                       CL_PROFILING_COMMAND_START, CL_PROFILING_COMMAND_END};
    bool ok = true;
    for (int i = 0; i < 4 && ok; ++i)
      ok = g_next->clGetEventProfilingInfo(ev, what[i], sizeof t[i], &t[i], nullptr) == CL_SUCCESS;
    if (!ok || t[3] < t[2]) {
      g_stats.unprofiled.fetch_add(1, std::memory_order_relaxed);
    } else {
      DeviceRec* d = p->queue->device;
      uint64_t now = p->host_begin ? MonoNow() : 0;  // only needed while the device's clock is undecided
      uint64_t queued = ToTrace(d, t[0], t[0], p->host_begin, now);
      uint64_t submit = ToTrace(d, t[1], t[0], p->host_begin, now);
      uint64_t start = ToTrace(d, t[2], t[0], p->host_begin, now);
      uint64_t end = ToTrace(d, t[3], t[0], p->host_begin, now);
      recorder::ExternalStream* s = p->queue->stream;
      switch (p->cmd) {
        case Cmd::kKernel: {
          accel::KernelActivity k;
          k.start = start;
          k.end = end;
          k.correlation = p->correlation;
          k.name = p->name;
          std::memcpy(k.grid, p->grid, sizeof k.grid);
          std::memcpy(k.block, p->block, sizeof k.block);
          k.queued = queued;
          k.submitted = submit;
          accel::EmitKernel(s, k);
          break;
        }
        case Cmd::kCopy: {
          accel::CopyActivity c;
          c.start = start;
          c.end = end;
          c.correlation = p->correlation;
          c.bytes = p->bytes;
          c.kind = p->copy_kind;
          c.src_kind = p->copy_kind == CopyKind::kHtoD ? MemoryKind::kUnknown : MemoryKind::kDevice;
          c.dst_kind = p->copy_kind == CopyKind::kDtoH ? MemoryKind::kUnknown : MemoryKind::kDevice;
          c.src_device = c.dst_device = d->number;
          c.flags = p->copy_flags;
          accel::EmitCopy(s, c);
          break;
        }
        case Cmd::kFill:
          accel::EmitFill(s, start, end, p->correlation, p->bytes, 0, MemoryKind::kDevice);
          break;
        case Cmd::kSync:
          accel::EmitSync(s, start, end, p->correlation, p->sync);
          break;
        case Cmd::kCommand:
          accel::EmitCommand(s, start, end, p->correlation, p->name, p->bytes);
          break;
      }
      g_stats.completed.fetch_add(1, std::memory_order_relaxed);
    }
  }
  g_next->clReleaseEvent(ev);
  g_pool->Put(p);
  g_stats.finished.fetch_add(1, std::memory_order_release);
}

// Attaches completion tracking to a command the driver accepted. `ev` is ours
// (one reference), whether or not the program also asked for it.
void Track(Pending* p, cl_event ev) {
  g_stats.commands.fetch_add(1, std::memory_order_relaxed);
  if (!p->queue->profiled) {
    g_stats.unprofiled_queues.fetch_add(1, std::memory_order_relaxed);
    g_next->clReleaseEvent(ev);
    g_pool->Put(p);
    return;
  }
  g_stats.tracked.fetch_add(1, std::memory_order_relaxed);
  // Everything the callback reads is in place: it may run right here.
  if (g_next->clSetEventCallback(ev, CL_COMPLETE, OnComplete, p) != CL_SUCCESS) {
    g_stats.tracked.fetch_sub(1, std::memory_order_relaxed);
    g_stats.untracked.fetch_add(1, std::memory_order_relaxed);
    g_next->clReleaseEvent(ev);
    g_pool->Put(p);
  }
}

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

void NoArgs(uint64_t, QueueRec*) {}

auto BytesArg(uint64_t bytes, bool blocking = false) {
  return [bytes, blocking](uint64_t, QueueRec*) {
    accel::ApiArg(g_key_bytes, bytes);
    // The call returns only when the command has completed.
    if (blocking) accel::ApiArg(g_key_blocking, 1);
  };
}

Pending CopyProto(CopyKind kind, uint64_t bytes, bool blocking) {
  Pending p;
  p.cmd = Cmd::kCopy;
  p.copy_kind = kind;
  p.bytes = bytes;
  p.copy_flags = blocking ? format::kCopyBlocking : format::kCopyAsync;
  return p;
}

Pending CommandProto(uint32_t name, uint64_t bytes) {
  Pending p;
  p.cmd = Cmd::kCommand;
  p.name = name;
  p.bytes = bytes;
  return p;
}

Pending SyncProto(SyncType t) {
  Pending p;
  p.cmd = Cmd::kSync;
  p.sync = t;
  return p;
}

uint64_t Volume(const size_t* region) { return region ? uint64_t{region[0]} * region[1] * region[2] : 0; }

uint64_t ImageBytes(cl_mem image, const size_t* region) {
  size_t elem = 0;
  if (g_next->clGetImageInfo(image, CL_IMAGE_ELEMENT_SIZE, sizeof elem, &elem, nullptr) != CL_SUCCESS) elem = 0;
  return Volume(region) * elem;
}

// --- allocations ---------------------------------------------------------------------------

struct Allocation {
  recorder::ExternalStream* stream;
  uint64_t address;
  uint64_t bytes;
  int64_t program_refs = 1;  // the program's own references: create, retains, releases (under g_alloc_mu)
  bool freed = false;        // the free was emitted at the program's last release (under g_alloc_mu)
};

// Live buffers by handle. The free is emitted when the program releases its
// last reference (the driver may destroy the object later, on its own thread,
// even after the program has exited and the recording has ended: PoCL did, and
// a buffer's free went missing); the destructor callback is the fallback when
// the driver still held references of its own then.
std::mutex g_alloc_mu;
std::unordered_map<cl_mem, Allocation*> g_allocs;  // under g_alloc_mu

void CL_CALLBACK OnMemDestroyed(cl_mem m, void* user) {
  auto* a = static_cast<Allocation*>(user);
  bool freed;
  {
    std::lock_guard<std::mutex> lock(g_alloc_mu);
    g_allocs.erase(m);
    freed = a->freed;
  }
  if (!freed && On())
    accel::EmitMemory(a->stream, MonoNow(), 0, a->address, a->bytes, accel::MemoryOp::kFree, MemoryKind::kDevice);
  delete a;
}

// The program's own reference count of a buffer (the driver's count includes
// references of its own: kernels holding their arguments, pending commands).
// When the program drops its last reference, the buffer is gone for it now.
void RetainingMemObject(cl_mem m) {
  std::lock_guard<std::mutex> lock(g_alloc_mu);
  if (auto it = g_allocs.find(m); it != g_allocs.end()) ++it->second->program_refs;
}

void ReleasingMemObject(cl_mem m) {
  if (!m) return;
  std::lock_guard<std::mutex> lock(g_alloc_mu);
  auto it = g_allocs.find(m);
  if (it == g_allocs.end() || it->second->freed || --it->second->program_refs > 0) return;
  Allocation* a = it->second;
  a->freed = true;
  if (On()) accel::EmitMemory(a->stream, MonoNow(), 0, a->address, a->bytes, accel::MemoryOp::kFree, MemoryKind::kDevice);
}

void RecordAllocation(cl_context ctx, cl_mem m, uint64_t bytes) {
  if (!m || !On()) return;
  DeviceRec* d = ContextDevice(ctx);
  if (!d) return;
  auto address = reinterpret_cast<uint64_t>(m);
  accel::EmitMemory(d->memory_stream, MonoNow(), 0, address, bytes, accel::MemoryOp::kAllocate, MemoryKind::kDevice);
  auto* a = new Allocation{d->memory_stream, address, bytes};
  {
    std::lock_guard<std::mutex> lock(g_alloc_mu);
    g_allocs[m] = a;
  }
  if (g_next->clSetMemObjectDestructorCallback(m, OnMemDestroyed, a) != CL_SUCCESS) {
    std::lock_guard<std::mutex> lock(g_alloc_mu);
    g_allocs.erase(m);
    delete a;
  }
}

std::mutex g_svm_mu;
std::unordered_map<void*, std::pair<recorder::ExternalStream*, uint64_t>> g_svm;  // under g_svm_mu

std::mutex g_map_mu;
std::unordered_map<void*, uint64_t> g_mapped;  // mapped pointer -> bytes, under g_map_mu

// --- wrappers: contexts, queues --------------------------------------------------------------

cl_context CL_API_CALL W_clCreateContext(const cl_context_properties* props, cl_uint n, const cl_device_id* devs,
                                         void(CL_CALLBACK* notify)(const char*, const void*, size_t, void*), void* user,
                                         cl_int* err) {
  return ApiCall<cl_context>(k_clCreateContext, [&] { return g_next->clCreateContext(props, n, devs, notify, user, err); });
}

cl_context CL_API_CALL W_clCreateContextFromType(const cl_context_properties* props, cl_device_type type,
                                                 void(CL_CALLBACK* notify)(const char*, const void*, size_t, void*),
                                                 void* user, cl_int* err) {
  return ApiCall<cl_context>(k_clCreateContextFromType,
                             [&] { return g_next->clCreateContextFromType(props, type, notify, user, err); });
}

cl_command_queue CL_API_CALL W_clCreateCommandQueue(cl_context ctx, cl_device_id dev, cl_command_queue_properties props,
                                                    cl_int* err) {
  if (!On()) return g_next->clCreateCommandQueue(ctx, dev, props, err);
  bool forced = !(props & CL_QUEUE_PROFILING_ENABLE);
  cl_command_queue q = ApiCall<cl_command_queue>(k_clCreateCommandQueue, [&] {
    return g_next->clCreateCommandQueue(ctx, dev, props | CL_QUEUE_PROFILING_ENABLE, err);
  });
  if (q) RegisterQueue(q, dev, forced, true, {}, (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0);
  return q;
}

cl_command_queue CL_API_CALL W_clCreateCommandQueueWithProperties(cl_context ctx, cl_device_id dev,
                                                                  const cl_queue_properties* props, cl_int* err) {
  if (!On()) return g_next->clCreateCommandQueueWithProperties(ctx, dev, props, err);
  std::vector<cl_queue_properties> app, ours;
  bool seen = false, forced = false, ooo = false;
  for (const cl_queue_properties* it = props; it && it[0]; it += 2) {
    app.push_back(it[0]);
    app.push_back(it[1]);
    cl_queue_properties v = it[1];
    if (it[0] == CL_QUEUE_PROPERTIES) {
      seen = true;
      forced = !(v & CL_QUEUE_PROFILING_ENABLE);
      ooo = (v & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0;
      v |= CL_QUEUE_PROFILING_ENABLE;
    }
    ours.push_back(it[0]);
    ours.push_back(v);
  }
  if (!seen) {
    forced = true;
    ours.push_back(CL_QUEUE_PROPERTIES);
    ours.push_back(CL_QUEUE_PROFILING_ENABLE);
  }
  ours.push_back(0);
  if (props) app.push_back(0);
  cl_command_queue q = ApiCall<cl_command_queue>(k_clCreateCommandQueueWithProperties, [&] {
    return g_next->clCreateCommandQueueWithProperties(ctx, dev, ours.data(), err);
  });
  if (q) RegisterQueue(q, dev, forced, true, std::move(app), ooo);
  return q;
}

// The program asked for a queue without profiling: it sees one without profiling.
cl_int CL_API_CALL W_clGetCommandQueueInfo(cl_command_queue q, cl_command_queue_info what, size_t size, void* value,
                                           size_t* size_ret) {
  cl_int rc = g_next->clGetCommandQueueInfo(q, what, size, value, size_ret);
  if (rc != CL_SUCCESS || !On() || !value) return rc;
  QueueRec* r = nullptr;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_queues.find(q);
    if (it != g_queues.end()) r = it->second;
  }
  if (!r || !r->forced) return rc;
  if (what == CL_QUEUE_PROPERTIES && size >= sizeof(cl_command_queue_properties)) {
    cl_command_queue_properties p;
    std::memcpy(&p, value, sizeof p);
    p &= ~static_cast<cl_command_queue_properties>(CL_QUEUE_PROFILING_ENABLE);
    std::memcpy(value, &p, sizeof p);
  } else if (what == CL_QUEUE_PROPERTIES_ARRAY) {
    size_t bytes = r->app_props.size() * sizeof(cl_queue_properties);
    if (size_ret) *size_ret = bytes;
    if (size < bytes) return CL_INVALID_VALUE;
    if (bytes) std::memcpy(value, r->app_props.data(), bytes);
  }
  return rc;
}

cl_int CL_API_CALL W_clReleaseCommandQueue(cl_command_queue q) {
  return ApiCall<cl_int>(k_clReleaseCommandQueue, [&] { return g_next->clReleaseCommandQueue(q); });
}

void QueueArg(cl_command_queue q) {
  if (QueueRec* r = FindQueue(q)) accel::ApiArg(g_key_queue, r->id);
}

cl_int CL_API_CALL W_clFlush(cl_command_queue q) {
  return ApiCall<cl_int>(k_clFlush, [&] {
    if (On()) QueueArg(q);
    return g_next->clFlush(q);
  });
}

cl_int CL_API_CALL W_clFinish(cl_command_queue q) {
  return ApiCall<cl_int>(k_clFinish, [&] {
    if (On()) QueueArg(q);
    return g_next->clFinish(q);
  });
}

cl_int CL_API_CALL W_clWaitForEvents(cl_uint n, const cl_event* evs) {
  return ApiCall<cl_int>(k_clWaitForEvents, [&] { return g_next->clWaitForEvents(n, evs); });
}

// --- wrappers: memory objects -------------------------------------------------------------------

cl_mem CL_API_CALL W_clCreateBuffer(cl_context ctx, cl_mem_flags flags, size_t size, void* host, cl_int* err) {
  cl_mem m = ApiCall<cl_mem>(k_clCreateBuffer, [&] {
    if (On()) accel::ApiArg(g_key_size, size);
    return g_next->clCreateBuffer(ctx, flags, size, host, err);
  });
  RecordAllocation(ctx, m, size);
  return m;
}

cl_mem CL_API_CALL W_clCreateBufferWithProperties(cl_context ctx, const cl_mem_properties* props, cl_mem_flags flags,
                                                  size_t size, void* host, cl_int* err) {
  cl_mem m = ApiCall<cl_mem>(k_clCreateBufferWithProperties, [&] {
    if (On()) accel::ApiArg(g_key_size, size);
    return g_next->clCreateBufferWithProperties(ctx, props, flags, size, host, err);
  });
  RecordAllocation(ctx, m, size);
  return m;
}

// Sub-buffers alias their parent's memory: an API call, not an allocation.
cl_mem CL_API_CALL W_clCreateSubBuffer(cl_mem parent, cl_mem_flags flags, cl_buffer_create_type type, const void* info,
                                       cl_int* err) {
  return ApiCall<cl_mem>(k_clCreateSubBuffer, [&] { return g_next->clCreateSubBuffer(parent, flags, type, info, err); });
}

uint64_t ImageAllocationBytes(cl_mem m) {
  size_t bytes = 0;
  if (!m || g_next->clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof bytes, &bytes, nullptr) != CL_SUCCESS) return 0;
  return bytes;
}

cl_mem CL_API_CALL W_clCreateImage(cl_context ctx, cl_mem_flags flags, const cl_image_format* fmt,
                                   const cl_image_desc* desc, void* host, cl_int* err) {
  cl_mem m = ApiCall<cl_mem>(k_clCreateImage, [&] { return g_next->clCreateImage(ctx, flags, fmt, desc, host, err); });
  if (m && On()) RecordAllocation(ctx, m, ImageAllocationBytes(m));
  return m;
}

cl_mem CL_API_CALL W_clCreateImageWithProperties(cl_context ctx, const cl_mem_properties* props, cl_mem_flags flags,
                                                 const cl_image_format* fmt, const cl_image_desc* desc, void* host,
                                                 cl_int* err) {
  cl_mem m = ApiCall<cl_mem>(k_clCreateImageWithProperties, [&] {
    return g_next->clCreateImageWithProperties(ctx, props, flags, fmt, desc, host, err);
  });
  if (m && On()) RecordAllocation(ctx, m, ImageAllocationBytes(m));
  return m;
}

cl_int CL_API_CALL W_clRetainMemObject(cl_mem m) {
  cl_int rc = ApiCall<cl_int>(k_clRetainMemObject, [&] { return g_next->clRetainMemObject(m); });
  if (rc == CL_SUCCESS) RetainingMemObject(m);
  return rc;
}

cl_int CL_API_CALL W_clReleaseMemObject(cl_mem m) {
  ReleasingMemObject(m);
  return ApiCall<cl_int>(k_clReleaseMemObject, [&] { return g_next->clReleaseMemObject(m); });
}

void* CL_API_CALL W_clSVMAlloc(cl_context ctx, cl_svm_mem_flags flags, size_t size, cl_uint alignment) {
  void* p = ApiCall<void*>(k_clSVMAlloc, [&] {
    if (On()) accel::ApiArg(g_key_size, size);
    return g_next->clSVMAlloc(ctx, flags, size, alignment);
  });
  if (p && On()) {
    if (DeviceRec* d = ContextDevice(ctx)) {
      accel::EmitMemory(d->memory_stream, MonoNow(), 0, reinterpret_cast<uint64_t>(p), size, accel::MemoryOp::kAllocate,
                        MemoryKind::kManaged);
      std::lock_guard<std::mutex> lk(g_svm_mu);
      g_svm[p] = {d->memory_stream, size};
    }
  }
  return p;
}

void ForgetSvm(void* p) {
  std::pair<recorder::ExternalStream*, uint64_t> a{nullptr, 0};
  {
    std::lock_guard<std::mutex> lk(g_svm_mu);
    auto it = g_svm.find(p);
    if (it == g_svm.end()) return;
    a = it->second;
    g_svm.erase(it);
  }
  accel::EmitMemory(a.first, MonoNow(), 0, reinterpret_cast<uint64_t>(p), a.second, accel::MemoryOp::kFree,
                    MemoryKind::kManaged);
}

void CL_API_CALL W_clSVMFree(cl_context ctx, void* p) {
  if (!On()) return g_next->clSVMFree(ctx, p);
  ApiCall<int>(k_clSVMFree, [&] {
    g_next->clSVMFree(ctx, p);
    return 0;
  });
  if (p) ForgetSvm(p);
}

// --- wrappers: programs and kernels ---------------------------------------------------------------

cl_program CL_API_CALL W_clCreateProgramWithSource(cl_context ctx, cl_uint n, const char** src, const size_t* len,
                                                   cl_int* err) {
  return ApiCall<cl_program>(k_clCreateProgramWithSource,
                             [&] { return g_next->clCreateProgramWithSource(ctx, n, src, len, err); });
}

cl_program CL_API_CALL W_clCreateProgramWithBinary(cl_context ctx, cl_uint n, const cl_device_id* devs,
                                                   const size_t* len, const unsigned char** bins, cl_int* status,
                                                   cl_int* err) {
  return ApiCall<cl_program>(k_clCreateProgramWithBinary,
                             [&] { return g_next->clCreateProgramWithBinary(ctx, n, devs, len, bins, status, err); });
}

cl_program CL_API_CALL W_clCreateProgramWithIL(cl_context ctx, const void* il, size_t len, cl_int* err) {
  return ApiCall<cl_program>(k_clCreateProgramWithIL, [&] { return g_next->clCreateProgramWithIL(ctx, il, len, err); });
}

cl_int CL_API_CALL W_clBuildProgram(cl_program prog, cl_uint n, const cl_device_id* devs, const char* opts,
                                    void(CL_CALLBACK* notify)(cl_program, void*), void* user) {
  return ApiCall<cl_int>(k_clBuildProgram, [&] { return g_next->clBuildProgram(prog, n, devs, opts, notify, user); });
}

cl_int CL_API_CALL W_clCompileProgram(cl_program prog, cl_uint n, const cl_device_id* devs, const char* opts,
                                      cl_uint nh, const cl_program* headers, const char** names,
                                      void(CL_CALLBACK* notify)(cl_program, void*), void* user) {
  return ApiCall<cl_int>(k_clCompileProgram, [&] {
    return g_next->clCompileProgram(prog, n, devs, opts, nh, headers, names, notify, user);
  });
}

cl_program CL_API_CALL W_clLinkProgram(cl_context ctx, cl_uint n, const cl_device_id* devs, const char* opts,
                                       cl_uint np, const cl_program* progs, void(CL_CALLBACK* notify)(cl_program, void*),
                                       void* user, cl_int* err) {
  return ApiCall<cl_program>(k_clLinkProgram,
                             [&] { return g_next->clLinkProgram(ctx, n, devs, opts, np, progs, notify, user, err); });
}

cl_kernel CL_API_CALL W_clCreateKernel(cl_program prog, const char* name, cl_int* err) {
  cl_kernel k = ApiCall<cl_kernel>(k_clCreateKernel, [&] { return g_next->clCreateKernel(prog, name, err); });
  if (k && On()) RememberKernel(k);
  return k;
}

cl_int CL_API_CALL W_clCreateKernelsInProgram(cl_program prog, cl_uint n, cl_kernel* kernels, cl_uint* n_ret) {
  cl_int rc = ApiCall<cl_int>(k_clCreateKernelsInProgram,
                              [&] { return g_next->clCreateKernelsInProgram(prog, n, kernels, n_ret); });
  if (rc == CL_SUCCESS && kernels && On()) {
    cl_uint got = n;
    if (n_ret) got = std::min(n, *n_ret);
    for (cl_uint i = 0; i < got; ++i) RememberKernel(kernels[i]);
  }
  return rc;
}

cl_kernel CL_API_CALL W_clCloneKernel(cl_kernel src, cl_int* err) {
  cl_kernel k = ApiCall<cl_kernel>(k_clCloneKernel, [&] { return g_next->clCloneKernel(src, err); });
  if (k && On()) RememberKernel(k);
  return k;
}

// --- wrappers: enqueues --------------------------------------------------------------------------------

Pending KernelProto(cl_kernel k, cl_uint dim, const size_t* gws, const size_t* lws, uint32_t name) {
  Pending p;
  p.cmd = Cmd::kKernel;
  p.name = name ? name : (On() ? KernelName(k) : 0);
  for (cl_uint i = 0; i < 3; ++i) {
    uint64_t g = (gws && i < dim) ? gws[i] : 1;
    uint64_t l = (lws && i < dim) ? lws[i] : 0;
    if (lws) {
      // Work-groups per dimension (CUDA's grid), rounded up for non-uniform groups.
      p.grid[i] = static_cast<uint32_t>(l ? (g + l - 1) / l : g);
      p.block[i] = static_cast<uint32_t>(l ? l : 1);
    } else {
      // No local size: the driver picks the groups. The grid counts work-items
      // and the block stays 0 (unknown), as the schema documents.
      p.grid[i] = static_cast<uint32_t>(g);
    }
  }
  return p;
}

// The launch API event of a kernel command. The global size is grid x block
// (grid alone without a local size).
void EmitLaunch(const Pending& proto, uint64_t corr, const QueueRec* qr) {
  accel::LaunchArgs a;
  a.correlation = corr;
  a.kernel = proto.name;
  std::memcpy(a.grid, proto.grid, sizeof a.grid);
  std::memcpy(a.block, proto.block, sizeof a.block);
  if (qr) {
    a.device = qr->device->number;
    a.queue = qr->id;
  }
  accel::ApiLaunch(a);
}

cl_int CL_API_CALL W_clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k, cl_uint dim, const size_t* off,
                                            const size_t* gws, const size_t* lws, cl_uint nw, const cl_event* wl,
                                            cl_event* ev) {
  if (!On()) return g_next->clEnqueueNDRangeKernel(q, k, dim, off, gws, lws, nw, wl, ev);
  Pending proto = KernelProto(k, dim, gws, lws, 0);
  return Enqueue(
      k_clEnqueueNDRangeKernel, q, ev, proto,
      [&](uint64_t corr, QueueRec* qr) { EmitLaunch(proto, corr, qr); },
      [&](cl_event* e) { return g_next->clEnqueueNDRangeKernel(q, k, dim, off, gws, lws, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueTask(cl_command_queue q, cl_kernel k, cl_uint nw, const cl_event* wl, cl_event* ev) {
  if (!On()) return g_next->clEnqueueTask(q, k, nw, wl, ev);
  size_t one = 1;
  Pending proto = KernelProto(k, 1, &one, &one, 0);
  return Enqueue(
      k_clEnqueueTask, q, ev, proto,
      [&](uint64_t corr, QueueRec* qr) { EmitLaunch(proto, corr, qr); },
      [&](cl_event* e) { return g_next->clEnqueueTask(q, k, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueNativeKernel(cl_command_queue q, void(CL_CALLBACK* fn)(void*), void* args, size_t cb,
                                           cl_uint nm, const cl_mem* mems, const void** locs, cl_uint nw,
                                           const cl_event* wl, cl_event* ev) {
  return Enqueue(k_clEnqueueNativeKernel, q, ev, CommandProto(g_name_native, 0), NoArgs,
                 [&](cl_event* e) { return g_next->clEnqueueNativeKernel(q, fn, args, cb, nm, mems, locs, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueReadBuffer(cl_command_queue q, cl_mem b, cl_bool blk, size_t off, size_t sz, void* p,
                                         cl_uint nw, const cl_event* wl, cl_event* ev) {
  return Enqueue(k_clEnqueueReadBuffer, q, ev, CopyProto(CopyKind::kDtoH, sz, blk), BytesArg(sz, blk),
                 [&](cl_event* e) { return g_next->clEnqueueReadBuffer(q, b, blk, off, sz, p, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueWriteBuffer(cl_command_queue q, cl_mem b, cl_bool blk, size_t off, size_t sz,
                                          const void* p, cl_uint nw, const cl_event* wl, cl_event* ev) {
  return Enqueue(k_clEnqueueWriteBuffer, q, ev, CopyProto(CopyKind::kHtoD, sz, blk), BytesArg(sz, blk),
                 [&](cl_event* e) { return g_next->clEnqueueWriteBuffer(q, b, blk, off, sz, p, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueCopyBuffer(cl_command_queue q, cl_mem s, cl_mem d, size_t so, size_t dof, size_t sz,
                                         cl_uint nw, const cl_event* wl, cl_event* ev) {
  return Enqueue(k_clEnqueueCopyBuffer, q, ev, CopyProto(CopyKind::kDtoD, sz, false), BytesArg(sz),
                 [&](cl_event* e) { return g_next->clEnqueueCopyBuffer(q, s, d, so, dof, sz, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueReadBufferRect(cl_command_queue q, cl_mem b, cl_bool blk, const size_t* bo,
                                             const size_t* ho, const size_t* region, size_t brp, size_t bsp,
                                             size_t hrp, size_t hsp, void* p, cl_uint nw, const cl_event* wl,
                                             cl_event* ev) {
  uint64_t bytes = Volume(region);  // region[0] is in bytes for buffer rects
  return Enqueue(k_clEnqueueReadBufferRect, q, ev, CopyProto(CopyKind::kDtoH, bytes, blk), BytesArg(bytes, blk),
                 [&](cl_event* e) {
                   return g_next->clEnqueueReadBufferRect(q, b, blk, bo, ho, region, brp, bsp, hrp, hsp, p, nw, wl, e);
                 });
}

cl_int CL_API_CALL W_clEnqueueWriteBufferRect(cl_command_queue q, cl_mem b, cl_bool blk, const size_t* bo,
                                              const size_t* ho, const size_t* region, size_t brp, size_t bsp,
                                              size_t hrp, size_t hsp, const void* p, cl_uint nw, const cl_event* wl,
                                              cl_event* ev) {
  uint64_t bytes = Volume(region);
  return Enqueue(k_clEnqueueWriteBufferRect, q, ev, CopyProto(CopyKind::kHtoD, bytes, blk), BytesArg(bytes, blk),
                 [&](cl_event* e) {
                   return g_next->clEnqueueWriteBufferRect(q, b, blk, bo, ho, region, brp, bsp, hrp, hsp, p, nw, wl, e);
                 });
}

cl_int CL_API_CALL W_clEnqueueCopyBufferRect(cl_command_queue q, cl_mem s, cl_mem d, const size_t* so,
                                             const size_t* dof, const size_t* region, size_t srp, size_t ssp,
                                             size_t drp, size_t dsp, cl_uint nw, const cl_event* wl, cl_event* ev) {
  uint64_t bytes = Volume(region);
  return Enqueue(k_clEnqueueCopyBufferRect, q, ev, CopyProto(CopyKind::kDtoD, bytes, false), BytesArg(bytes),
                 [&](cl_event* e) {
                   return g_next->clEnqueueCopyBufferRect(q, s, d, so, dof, region, srp, ssp, drp, dsp, nw, wl, e);
                 });
}

cl_int CL_API_CALL W_clEnqueueFillBuffer(cl_command_queue q, cl_mem b, const void* pat, size_t ps, size_t off,
                                         size_t sz, cl_uint nw, const cl_event* wl, cl_event* ev) {
  Pending proto;
  proto.cmd = Cmd::kFill;
  proto.bytes = sz;
  return Enqueue(k_clEnqueueFillBuffer, q, ev, proto, BytesArg(sz),
                 [&](cl_event* e) { return g_next->clEnqueueFillBuffer(q, b, pat, ps, off, sz, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueReadImage(cl_command_queue q, cl_mem img, cl_bool blk, const size_t* origin,
                                        const size_t* region, size_t rp, size_t sp, void* p, cl_uint nw,
                                        const cl_event* wl, cl_event* ev) {
  uint64_t bytes = On() ? ImageBytes(img, region) : 0;
  return Enqueue(k_clEnqueueReadImage, q, ev, CopyProto(CopyKind::kDtoH, bytes, blk), BytesArg(bytes, blk),
                 [&](cl_event* e) { return g_next->clEnqueueReadImage(q, img, blk, origin, region, rp, sp, p, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueWriteImage(cl_command_queue q, cl_mem img, cl_bool blk, const size_t* origin,
                                         const size_t* region, size_t rp, size_t sp, const void* p, cl_uint nw,
                                         const cl_event* wl, cl_event* ev) {
  uint64_t bytes = On() ? ImageBytes(img, region) : 0;
  return Enqueue(k_clEnqueueWriteImage, q, ev, CopyProto(CopyKind::kHtoD, bytes, blk), BytesArg(bytes, blk),
                 [&](cl_event* e) { return g_next->clEnqueueWriteImage(q, img, blk, origin, region, rp, sp, p, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueCopyImage(cl_command_queue q, cl_mem s, cl_mem d, const size_t* so, const size_t* dof,
                                        const size_t* region, cl_uint nw, const cl_event* wl, cl_event* ev) {
  uint64_t bytes = On() ? ImageBytes(s, region) : 0;
  return Enqueue(k_clEnqueueCopyImage, q, ev, CopyProto(CopyKind::kDtoD, bytes, false), BytesArg(bytes),
                 [&](cl_event* e) { return g_next->clEnqueueCopyImage(q, s, d, so, dof, region, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueFillImage(cl_command_queue q, cl_mem img, const void* color, const size_t* origin,
                                        const size_t* region, cl_uint nw, const cl_event* wl, cl_event* ev) {
  Pending proto;
  proto.cmd = Cmd::kFill;
  proto.bytes = On() ? ImageBytes(img, region) : 0;
  return Enqueue(k_clEnqueueFillImage, q, ev, proto, BytesArg(proto.bytes),
                 [&](cl_event* e) { return g_next->clEnqueueFillImage(q, img, color, origin, region, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueCopyImageToBuffer(cl_command_queue q, cl_mem s, cl_mem d, const size_t* so,
                                                const size_t* region, size_t dof, cl_uint nw, const cl_event* wl,
                                                cl_event* ev) {
  uint64_t bytes = On() ? ImageBytes(s, region) : 0;
  return Enqueue(k_clEnqueueCopyImageToBuffer, q, ev, CopyProto(CopyKind::kDtoD, bytes, false), BytesArg(bytes),
                 [&](cl_event* e) { return g_next->clEnqueueCopyImageToBuffer(q, s, d, so, region, dof, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueCopyBufferToImage(cl_command_queue q, cl_mem s, cl_mem d, size_t so, const size_t* dof,
                                                const size_t* region, cl_uint nw, const cl_event* wl, cl_event* ev) {
  uint64_t bytes = On() ? ImageBytes(d, region) : 0;
  return Enqueue(k_clEnqueueCopyBufferToImage, q, ev, CopyProto(CopyKind::kDtoD, bytes, false), BytesArg(bytes),
                 [&](cl_event* e) { return g_next->clEnqueueCopyBufferToImage(q, s, d, so, dof, region, nw, wl, e); });
}

void RememberMapping(void* p, uint64_t bytes) {
  if (!p) return;
  std::lock_guard<std::mutex> lk(g_map_mu);
  g_mapped[p] = bytes;
}

uint64_t ForgetMapping(void* p) {
  std::lock_guard<std::mutex> lk(g_map_mu);
  auto it = g_mapped.find(p);
  if (it == g_mapped.end()) return 0;
  uint64_t b = it->second;
  g_mapped.erase(it);
  return b;
}

void* CL_API_CALL W_clEnqueueMapBuffer(cl_command_queue q, cl_mem b, cl_bool blk, cl_map_flags flags, size_t off,
                                       size_t sz, cl_uint nw, const cl_event* wl, cl_event* ev, cl_int* err) {
  if (!On()) return g_next->clEnqueueMapBuffer(q, b, blk, flags, off, sz, nw, wl, ev, err);
  void* mapped = nullptr;
  cl_int rc = Enqueue(k_clEnqueueMapBuffer, q, ev, CommandProto(g_name_map, sz), BytesArg(sz, blk), [&](cl_event* e) {
    cl_int local = CL_SUCCESS;
    mapped = g_next->clEnqueueMapBuffer(q, b, blk, flags, off, sz, nw, wl, e, &local);
    return local;
  });
  if (err) *err = rc;
  if (rc == CL_SUCCESS) RememberMapping(mapped, sz);
  return mapped;
}

void* CL_API_CALL W_clEnqueueMapImage(cl_command_queue q, cl_mem img, cl_bool blk, cl_map_flags flags,
                                      const size_t* origin, const size_t* region, size_t* rp, size_t* sp, cl_uint nw,
                                      const cl_event* wl, cl_event* ev, cl_int* err) {
  if (!On()) return g_next->clEnqueueMapImage(q, img, blk, flags, origin, region, rp, sp, nw, wl, ev, err);
  uint64_t bytes = ImageBytes(img, region);
  void* mapped = nullptr;
  cl_int rc = Enqueue(k_clEnqueueMapImage, q, ev, CommandProto(g_name_map, bytes), BytesArg(bytes, blk), [&](cl_event* e) {
    cl_int local = CL_SUCCESS;
    mapped = g_next->clEnqueueMapImage(q, img, blk, flags, origin, region, rp, sp, nw, wl, e, &local);
    return local;
  });
  if (err) *err = rc;
  if (rc == CL_SUCCESS) RememberMapping(mapped, bytes);
  return mapped;
}

cl_int CL_API_CALL W_clEnqueueUnmapMemObject(cl_command_queue q, cl_mem m, void* p, cl_uint nw, const cl_event* wl,
                                             cl_event* ev) {
  uint64_t bytes = On() ? ForgetMapping(p) : 0;
  return Enqueue(k_clEnqueueUnmapMemObject, q, ev, CommandProto(g_name_unmap, bytes), BytesArg(bytes),
                 [&](cl_event* e) { return g_next->clEnqueueUnmapMemObject(q, m, p, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueMigrateMemObjects(cl_command_queue q, cl_uint n, const cl_mem* mems,
                                                cl_mem_migration_flags flags, cl_uint nw, const cl_event* wl,
                                                cl_event* ev) {
  uint64_t bytes = 0;
  for (cl_uint i = 0; On() && mems && i < n; ++i) bytes += ImageAllocationBytes(mems[i]);
  return Enqueue(k_clEnqueueMigrateMemObjects, q, ev, CommandProto(g_name_migrate, bytes), BytesArg(bytes),
                 [&](cl_event* e) { return g_next->clEnqueueMigrateMemObjects(q, n, mems, flags, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueMarker(cl_command_queue q, cl_event* ev) {
  return Enqueue(k_clEnqueueMarker, q, ev, SyncProto(SyncType::kMarker), NoArgs,
                 [&](cl_event* e) { return g_next->clEnqueueMarker(q, e); });
}

cl_int CL_API_CALL W_clEnqueueMarkerWithWaitList(cl_command_queue q, cl_uint nw, const cl_event* wl, cl_event* ev) {
  return Enqueue(k_clEnqueueMarkerWithWaitList, q, ev, SyncProto(SyncType::kMarker), NoArgs,
                 [&](cl_event* e) { return g_next->clEnqueueMarkerWithWaitList(q, nw, wl, e); });
}

// The 1.0 barrier has no event: timed as the equivalent 1.2 barrier when the
// driver has one.
cl_int CL_API_CALL W_clEnqueueBarrier(cl_command_queue q) {
  if (!On() || !g_next->clEnqueueBarrierWithWaitList) {
    return ApiCall<cl_int>(k_clEnqueueBarrier, [&] { return g_next->clEnqueueBarrier(q); });
  }
  return Enqueue(k_clEnqueueBarrier, q, nullptr, SyncProto(SyncType::kBarrier), NoArgs,
                 [&](cl_event* e) { return g_next->clEnqueueBarrierWithWaitList(q, 0, nullptr, e); });
}

cl_int CL_API_CALL W_clEnqueueBarrierWithWaitList(cl_command_queue q, cl_uint nw, const cl_event* wl, cl_event* ev) {
  return Enqueue(k_clEnqueueBarrierWithWaitList, q, ev, SyncProto(SyncType::kBarrier), NoArgs,
                 [&](cl_event* e) { return g_next->clEnqueueBarrierWithWaitList(q, nw, wl, e); });
}

// No event and no exact 1.2 equivalent (a barrier would also wait for earlier
// commands of an out-of-order queue): the API call only.
cl_int CL_API_CALL W_clEnqueueWaitForEvents(cl_command_queue q, cl_uint n, const cl_event* evs) {
  return ApiCall<cl_int>(k_clEnqueueWaitForEvents, [&] { return g_next->clEnqueueWaitForEvents(q, n, evs); });
}

cl_int CL_API_CALL W_clEnqueueSVMFree(cl_command_queue q, cl_uint n, void* ptrs[],
                                      void(CL_CALLBACK* fn)(cl_command_queue, cl_uint, void*[], void*), void* user,
                                      cl_uint nw, const cl_event* wl, cl_event* ev) {
  cl_int rc = Enqueue(k_clEnqueueSVMFree, q, ev, CommandProto(g_name_svm_free, 0), NoArgs,
                      [&](cl_event* e) { return g_next->clEnqueueSVMFree(q, n, ptrs, fn, user, nw, wl, e); });
  if (rc == CL_SUCCESS && On())
    for (cl_uint i = 0; ptrs && i < n; ++i) ForgetSvm(ptrs[i]);
  return rc;
}

cl_int CL_API_CALL W_clEnqueueSVMMemcpy(cl_command_queue q, cl_bool blk, void* dst, const void* src, size_t sz,
                                        cl_uint nw, const cl_event* wl, cl_event* ev) {
  return Enqueue(k_clEnqueueSVMMemcpy, q, ev, CopyProto(CopyKind::kUnknown, sz, blk), BytesArg(sz, blk),
                 [&](cl_event* e) { return g_next->clEnqueueSVMMemcpy(q, blk, dst, src, sz, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueSVMMemFill(cl_command_queue q, void* p, const void* pat, size_t ps, size_t sz, cl_uint nw,
                                         const cl_event* wl, cl_event* ev) {
  Pending proto;
  proto.cmd = Cmd::kFill;
  proto.bytes = sz;
  return Enqueue(k_clEnqueueSVMMemFill, q, ev, proto, BytesArg(sz),
                 [&](cl_event* e) { return g_next->clEnqueueSVMMemFill(q, p, pat, ps, sz, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueSVMMap(cl_command_queue q, cl_bool blk, cl_map_flags flags, void* p, size_t sz,
                                     cl_uint nw, const cl_event* wl, cl_event* ev) {
  if (On()) RememberMapping(p, sz);
  return Enqueue(k_clEnqueueSVMMap, q, ev, CommandProto(g_name_map, sz), BytesArg(sz, blk),
                 [&](cl_event* e) { return g_next->clEnqueueSVMMap(q, blk, flags, p, sz, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueSVMUnmap(cl_command_queue q, void* p, cl_uint nw, const cl_event* wl, cl_event* ev) {
  uint64_t bytes = On() ? ForgetMapping(p) : 0;
  return Enqueue(k_clEnqueueSVMUnmap, q, ev, CommandProto(g_name_unmap, bytes), BytesArg(bytes),
                 [&](cl_event* e) { return g_next->clEnqueueSVMUnmap(q, p, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueSVMMigrateMem(cl_command_queue q, cl_uint n, const void** ptrs, const size_t* sizes,
                                            cl_mem_migration_flags flags, cl_uint nw, const cl_event* wl,
                                            cl_event* ev) {
  uint64_t bytes = 0;
  for (cl_uint i = 0; sizes && i < n; ++i) bytes += sizes[i];
  return Enqueue(k_clEnqueueSVMMigrateMem, q, ev, CommandProto(g_name_migrate, bytes), BytesArg(bytes),
                 [&](cl_event* e) { return g_next->clEnqueueSVMMigrateMem(q, n, ptrs, sizes, flags, nw, wl, e); });
}

// --- lifecycle --------------------------------------------------------------------------------------

void OnForkChild() { g_on.store(false, std::memory_order_relaxed); }

// Runs before libstrata's own exit flush (registered later, so it runs first):
// gives completion callbacks still running on the driver's threads a moment,
// then says what was recorded and what was not.
void AtExit() {
  if (!On()) return;
  // Bounded: a command the program never waited for may still be running.
  for (int i = 0; i < 1000 && g_stats.InFlight() > 0; ++i) ::usleep(1000);
  LayerStats s = Stats();
  std::string detail = std::to_string(s.completed) + " of " + std::to_string(s.commands) +
                       " enqueued commands recorded with device times (ICD-loader layer";
  detail += s.forced_queues ? "; profiling switched on for " + std::to_string(s.forced_queues) + " queues)" : ")";
  if (uint64_t out = g_stats.outside_windows.load()) {
    const format::ControlBlock* cb = recorder::Control();
    detail += "; device activity " +
              std::string(cb ? format::CudaActivityName(static_cast<format::CudaActivity>(cb->cuda_activity.load()))
                             : "all") +
              ": " + std::to_string(out) + " more enqueued outside the steps asked for (API calls only)";
  }
  bool partial = false;
  if (s.in_flight) {
    detail += "; " + std::to_string(s.in_flight) + " still running at exit (not recorded)";
    partial = true;
  }
  if (s.unprofiled) {
    detail += "; " + std::to_string(s.unprofiled) + " without profiling information";
    partial = true;
  }
  if (s.aborted) {
    detail += "; " + std::to_string(s.aborted) + " aborted";
    partial = true;
  }
  if (s.untracked) {
    detail += "; " + std::to_string(s.untracked) + " could not be tracked";
    partial = true;
  }
  if (g_stats.unaligned_devices.load()) {
    detail += "; a device clock matched no host clock (aligned at its first command's completion)";
    partial = true;
  }
  recorder::ReportCollectorStatus("opencl", partial ? "partial" : "ok", detail);
}

bool InitLayer(const cl_icd_dispatch* target) {
  g_next = target;
  std::memset(&g_table, 0, sizeof g_table);
  if (!recorder::Active()) return true;  // loaded outside `strata record`: pass everything through
  for (uint32_t i = 0; i < kApiCount; ++i) g_api_name[i] = recorder::Intern(kApiNames[i]);
  g_key_bytes = recorder::Intern("bytes");
  g_key_size = recorder::Intern("size");
  g_key_blocking = recorder::Intern("blocking");
  g_key_queue = recorder::Intern("queue");
  g_name_map = recorder::Intern("Map");
  g_name_unmap = recorder::Intern("Unmap");
  g_name_migrate = recorder::Intern("Migrate");
  g_name_native = recorder::Intern("Native kernel");
  g_name_svm_free = recorder::Intern("SVM free");
  g_raw_clock = new accel::ClockMapper(CLOCK_MONOTONIC_RAW);
  g_boot_clock = new accel::ClockMapper(CLOCK_BOOTTIME);
  g_real_clock = new accel::ClockMapper(CLOCK_REALTIME);
  g_pool = new PendingPool();
#define STRATA_CL_WRAP(n) g_table.n = W_##n;
  STRATA_CL_APIS(STRATA_CL_WRAP)
#undef STRATA_CL_WRAP
  g_table.clGetCommandQueueInfo = W_clGetCommandQueueInfo;
  pthread_atfork(nullptr, nullptr, OnForkChild);
  std::atexit(AtExit);
  g_on.store(true, std::memory_order_release);
  return true;
}

}  // namespace

LayerStats Stats() {
  LayerStats s;
  s.commands = g_stats.commands.load();
  s.completed = g_stats.completed.load();
  s.aborted = g_stats.aborted.load();
  s.unprofiled = g_stats.unprofiled.load() + g_stats.unprofiled_queues.load();
  s.untracked = g_stats.untracked.load();
  s.in_flight = g_stats.InFlight();
  s.forced_queues = g_stats.forced_queues.load();
  return s;
}

}  // namespace strata::opencl

extern "C" {

__attribute__((visibility("default"))) CL_API_ENTRY cl_int CL_API_CALL clGetLayerInfo(cl_layer_info param, size_t size,
                                                                                       void* value, size_t* size_ret) {
  switch (param) {
    case CL_LAYER_API_VERSION: {
      cl_layer_api_version v = CL_LAYER_API_VERSION_100;
      if (size_ret) *size_ret = sizeof v;
      if (value) {
        if (size < sizeof v) return CL_INVALID_VALUE;
        std::memcpy(value, &v, sizeof v);
      }
      return CL_SUCCESS;
    }
    case CL_LAYER_NAME: {
      static const char kName[] = "strata";
      if (size_ret) *size_ret = sizeof kName;
      if (value) {
        if (size < sizeof kName) return CL_INVALID_VALUE;
        std::memcpy(value, kName, sizeof kName);
      }
      return CL_SUCCESS;
    }
    default: return CL_INVALID_VALUE;
  }
}

__attribute__((visibility("default"))) CL_API_ENTRY cl_int CL_API_CALL clInitLayer(cl_uint num_entries,
                                                                                    const cl_icd_dispatch* target,
                                                                                    cl_uint* num_entries_ret,
                                                                                    const cl_icd_dispatch** layer_dispatch_ret) {
  constexpr cl_uint kOurs = sizeof(cl_icd_dispatch) / sizeof(void*);
  if (!target || !num_entries_ret || !layer_dispatch_ret) return CL_INVALID_VALUE;
  if (num_entries < kOurs) {
    // An older loader with a shorter table: we would read past its end.
    strata::recorder::ReportCollectorStatus(
        "opencl", "unavailable",
        "the ICD loader's dispatch table has " + std::to_string(num_entries) + " entries, strata needs " +
            std::to_string(kOurs) + " (loader too old); OpenCL not recorded");
    return CL_INVALID_VALUE;
  }
  static std::once_flag once;
  std::call_once(once, [target] { strata::opencl::InitLayer(target); });
  *num_entries_ret = kOurs;
  *layer_dispatch_ret = &strata::opencl::g_table;
  return CL_SUCCESS;
}

}  // extern "C"
