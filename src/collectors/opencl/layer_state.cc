// The OpenCL layer's state and shared machinery (declared in layer_state.h).
#include "collectors/opencl/layer_state.h"

#include <algorithm>
#include <string>

namespace strata::opencl::layer {

const cl_icd_dispatch* g_next = nullptr;
cl_icd_dispatch g_table;
std::atomic<bool> g_on{false};
std::atomic<uint64_t> g_correlation{0};
uint32_t g_api_name[kApiCount];
uint32_t g_key_bytes, g_key_size, g_key_blocking, g_key_queue;
uint32_t g_name_map, g_name_unmap, g_name_migrate, g_name_native, g_name_svm_free;
Counters g_stats;

uint64_t MonoNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

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

std::mutex g_mu;

accel::ClockMapper* g_raw_clock = nullptr;
accel::ClockMapper* g_boot_clock = nullptr;
accel::ClockMapper* g_real_clock = nullptr;
std::vector<DeviceRec*> g_devices;

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

std::unordered_map<cl_command_queue, QueueRec*> g_queues;  // under g_mu
std::atomic<uint64_t> g_queue_gen{1};
uint64_t g_next_queue_id = 1;  // under g_mu; 0 is the allocations pseudo-queue

namespace {
struct QueueCache {
  cl_command_queue q = nullptr;
  uint64_t gen = 0;
  QueueRec* rec = nullptr;
};
thread_local QueueCache t_queue;
}  // namespace

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

std::unordered_map<cl_kernel, uint32_t> g_kernels;  // under g_mu: kernel -> interned name
std::atomic<uint64_t> g_kernel_gen{1};

namespace {
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
}  // namespace

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

PendingPool* g_pool = nullptr;

namespace {

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

}  // namespace

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

uint64_t ImageBytes(cl_mem image, const size_t* region) {
  size_t elem = 0;
  if (g_next->clGetImageInfo(image, CL_IMAGE_ELEMENT_SIZE, sizeof elem, &elem, nullptr) != CL_SUCCESS) elem = 0;
  return Volume(region) * elem;
}

namespace {

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

}  // namespace

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

}  // namespace strata::opencl::layer
