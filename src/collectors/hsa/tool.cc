// libstrata_hsa.so (design: hsa_tool.h).
#include <cxxabi.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "collectors/accel/emit.h"
#include "collectors/hsa/api_list.h"
#include "collectors/hsa/hsa_tool.h"
#include "format/schema_accel.h"
#include "recorder/runtime.h"

namespace strata::hsa {
namespace {

// --- the API tables ------------------------------------------------------------------

enum Api : uint32_t {
#define STRATA_HSA_ENUM(n) k_##n,
  STRATA_HSA_CORE_APIS(STRATA_HSA_ENUM) STRATA_HSA_AMD_APIS(STRATA_HSA_ENUM)
#undef STRATA_HSA_ENUM
      kApiCount
};
constexpr const char* kApiNames[] = {
#define STRATA_HSA_NAME(n) #n,
    STRATA_HSA_CORE_APIS(STRATA_HSA_NAME) STRATA_HSA_AMD_APIS(STRATA_HSA_NAME)
#undef STRATA_HSA_NAME
};

CoreApiTable g_core;  // the functions below us, copied before we patch the table
AmdExtTable g_ext;
void* g_saved[kApiCount];  // the same, by API index, for the generic wrappers
uint32_t g_name[kApiCount];
std::atomic<bool> g_on{false};
std::atomic<uint64_t> g_correlation{0};
uint32_t g_name_dispatch = 0, g_key_bytes = 0, g_key_size = 0;

struct Counters {
  std::atomic<uint64_t> api_calls{0}, dispatches{0}, dispatches_timed{0}, copies{0}, copies_timed{0}, untimed{0},
      signal_failures{0};
  std::atomic<int64_t> in_flight{0};
} g_stats;

bool On() { return g_on.load(std::memory_order_relaxed); }

// Called per packet, per poll: recorded only with STRATA_HSA_API=all.
bool Hot(const char* name) {
  static const char* const kHot[] = {"hsa_signal_load", "hsa_signal_store", "hsa_signal_silent_store",
                                     "hsa_signal_add", "hsa_signal_subtract", "hsa_signal_and", "hsa_signal_or",
                                     "hsa_signal_xor", "hsa_signal_exchange", "hsa_signal_cas", "hsa_queue_load",
                                     "hsa_queue_store", "hsa_queue_add_write_index", "hsa_queue_cas_write_index",
                                     "hsa_amd_signal_value_pointer"};
  for (const char* h : kHot)
    if (std::strncmp(name, h, std::strlen(h)) == 0) return true;
  return false;
}

// An API call on the calling thread.
class ApiScope {
 public:
  explicit ApiScope(Api api, uint64_t correlation = 0) : on_(On()) {
    if (!on_) return;
    g_stats.api_calls.fetch_add(1, std::memory_order_relaxed);
    correlation_ = correlation ? correlation : g_correlation.fetch_add(1, std::memory_order_relaxed) + 1;
    accel::ApiBegin(g_name[api], accel::ApiDomain::kRuntime, correlation_);
  }
  ~ApiScope() { End(0); }
  void End(int64_t result) {
    if (on_) accel::ApiEnd(result);
    on_ = false;
  }
  bool on() const { return on_; }

 private:
  bool on_;
  uint64_t correlation_ = 0;
};

inline int64_t Result(hsa_status_t s) { return static_cast<int64_t>(s); }
template <typename T>
int64_t Result(const T&) {
  return 0;
}

// The generic wrapper of table entry I: the call, as an API slice.
template <Api I, typename F>
struct Traced;
template <Api I, typename R, typename... A>
struct Traced<I, R (*)(A...)> {
  static R Call(A... a) {
    auto real = reinterpret_cast<R (*)(A...)>(g_saved[I]);
    if (!On()) return real(a...);
    ApiScope scope(I);
    if constexpr (std::is_void_v<R>) {
      real(a...);
    } else {
      R r = real(a...);
      scope.End(Result(r));
      return r;
    }
  }
};

// --- clock ----------------------------------------------------------------------------

struct HsaClock {
  double ns_per_tick = 1.0;
  std::atomic<int64_t> offset{0};
  std::atomic<uint64_t> last{0};
} g_clock;

uint64_t ReadHsaTimestamp(void*) {
  uint64_t t = 0;
  g_core.hsa_system_get_info_fn(HSA_SYSTEM_INFO_TIMESTAMP, &t);
  return t;
}

uint64_t CoarseNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void MeasureClock() {
  g_clock.offset.store(accel::MeasureClockOffset(ReadHsaTimestamp, nullptr, g_clock.ns_per_tick),
                       std::memory_order_relaxed);
  g_clock.last.store(CoarseNow(), std::memory_order_relaxed);
}

// HSA system ticks -> trace clock. The offset is re-measured at most once a second.
uint64_t ToNs(uint64_t ticks) {
  uint64_t now = CoarseNow(), last = g_clock.last.load(std::memory_order_relaxed);
  if (now - last > 1'000'000'000 && g_clock.last.compare_exchange_strong(last, now)) MeasureClock();
  double ns = static_cast<double>(ticks) * g_clock.ns_per_tick;
  return static_cast<uint64_t>(static_cast<int64_t>(ns) + g_clock.offset.load(std::memory_order_relaxed));
}

// --- agents, pools, kernels ------------------------------------------------------------

constexpr uint64_t kAllocationQueue = 1ull << 32;
constexpr uint64_t kCopyQueue = 3ull << 32;

std::mutex g_mu;  // registries below
struct AgentRec {
  hsa_device_type_t type = HSA_DEVICE_TYPE_CPU;
  uint32_t number = 0;  // GPU agents: kHsaDeviceBase + index
  recorder::ExternalStream* copies = nullptr;
  recorder::ExternalStream* allocations = nullptr;
};
std::unordered_map<uint64_t, AgentRec> g_agents;  // by agent handle
uint32_t g_gpus = 0;
uint64_t g_first_gpu = 0;
struct PoolRec {
  uint64_t agent = 0;
  accel::MemoryKind kind = accel::MemoryKind::kUnknown;
};
std::unordered_map<uint64_t, PoolRec> g_pools;  // by pool handle
struct AllocRec {
  uint64_t bytes;
  uint64_t agent;
  accel::MemoryKind kind;
};
std::unordered_map<uint64_t, AllocRec> g_allocs;  // by address
std::unordered_map<uint64_t, uint32_t> g_kernels;  // kernel object -> interned name
uint64_t g_next_queue = 1;

AgentRec* Agent(hsa_agent_t a) {
  auto it = g_agents.find(a.handle);
  return it == g_agents.end() ? nullptr : &it->second;
}

// The GPU agent a copy or pool belongs to (for CPU-only ones, the first GPU).
AgentRec* GpuOf(uint64_t a, uint64_t b = 0) {
  for (uint64_t h : {a, b}) {
    auto it = g_agents.find(h);
    if (it != g_agents.end() && it->second.type == HSA_DEVICE_TYPE_GPU) return &it->second;
  }
  auto it = g_agents.find(g_first_gpu);
  return it == g_agents.end() ? nullptr : &it->second;
}

template <typename T>
T AgentInfo(hsa_agent_t a, int what) {
  T v{};
  g_core.hsa_agent_get_info_fn(a, static_cast<hsa_agent_info_t>(what), &v);
  return v;
}

hsa_status_t OnPool(hsa_amd_memory_pool_t pool, void* data) {
  auto agent = *static_cast<uint64_t*>(data);
  uint32_t segment = 0, flags = 0;
  g_ext.hsa_amd_memory_pool_get_info_fn(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &segment);
  g_ext.hsa_amd_memory_pool_get_info_fn(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
  PoolRec p;
  p.agent = agent;
  bool gpu = g_agents[agent].type == HSA_DEVICE_TYPE_GPU;
  if (segment == HSA_AMD_SEGMENT_GLOBAL) {
    if (!gpu) p.kind = accel::MemoryKind::kPinned;  // host memory the GPUs can reach
    else if (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED) p.kind = accel::MemoryKind::kDevice;
    else p.kind = accel::MemoryKind::kManaged;  // fine-grained: coherent with the host
  }
  g_pools[pool.handle] = p;
  if (gpu && segment == HSA_AMD_SEGMENT_GLOBAL && (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED)) {
    size_t size = 0;
    g_ext.hsa_amd_memory_pool_get_info_fn(pool, HSA_AMD_MEMORY_POOL_INFO_SIZE, &size);
    static_cast<uint64_t*>(data)[1] += size;
  }
  return HSA_STATUS_SUCCESS;
}

void DescribeGpu(hsa_agent_t a, const AgentRec& r, uint64_t memory) {
  char name[64] = {0}, vendor[64] = {0}, product[64] = {0};
  g_core.hsa_agent_get_info_fn(a, HSA_AGENT_INFO_NAME, name);
  g_core.hsa_agent_get_info_fn(a, HSA_AGENT_INFO_VENDOR_NAME, vendor);
  g_core.hsa_agent_get_info_fn(a, static_cast<hsa_agent_info_t>(HSA_AMD_AGENT_INFO_PRODUCT_NAME), product);
  name[63] = vendor[63] = product[63] = 0;
  accel::DeviceInfo d;
  d.device = r.number;
  d.api = "hsa";
  d.name = product[0] ? product : name;
  d.vendor = vendor;
  d.compute_units = AgentInfo<uint32_t>(a, HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT);
  d.clock_khz = AgentInfo<uint32_t>(a, HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY) * 1000u;
  d.memory_bytes = memory;
  uint32_t width = AgentInfo<uint32_t>(a, HSA_AMD_AGENT_INFO_MEMORY_WIDTH);
  uint32_t mem_mhz = AgentInfo<uint32_t>(a, HSA_AMD_AGENT_INFO_MEMORY_MAX_FREQUENCY);
  d.memory_bandwidth = width / 8.0 * mem_mhz * 1e6 * 2;  // double data rate
  // Vector-unit peaks (64 lanes x FMA per CU per clock), not matrix cores.
  double f32 = d.compute_units * 64.0 * 2 * d.clock_khz * 1e3;
  std::string isa = name;
  d.peak_flops_f32 = f32;
  d.peak_flops_f16 = 2 * f32;
  d.peak_flops_f64 = (isa == "gfx90a" || isa.rfind("gfx94", 0) == 0) ? f32 : isa == "gfx908" ? f32 / 2 : f32 / 16;
  d.properties = std::string("ISA ") + name + "; " + std::to_string(width) + "-bit memory at " +
                 std::to_string(mem_mhz) + " MHz; peak FLOP/s are vector-unit (not matrix-core)";
  accel::EmitDeviceInfo(d);
}

hsa_status_t OnAgent(hsa_agent_t a, void*) {
  AgentRec r;
  r.type = AgentInfo<hsa_device_type_t>(a, HSA_AGENT_INFO_DEVICE);
  uint64_t pool_data[2] = {a.handle, 0};  // agent, coarse-grained global memory
  if (r.type == HSA_DEVICE_TYPE_GPU) {
    r.number = format::kHsaDeviceBase + g_gpus++;
    if (!g_first_gpu) g_first_gpu = a.handle;
    r.copies = recorder::OpenDeviceStream(r.number, kCopyQueue);
    r.allocations = recorder::OpenDeviceStream(r.number, kAllocationQueue);
    recorder::SetReorderWindow(r.copies, 500'000'000);
    accel::EmitQueueInfo(r.number, kCopyQueue, "HSA async copies");
    accel::EmitQueueInfo(r.number, kAllocationQueue, "HSA allocations");
  }
  g_agents[a.handle] = r;
  if (g_ext.hsa_amd_agent_iterate_memory_pools_fn) g_ext.hsa_amd_agent_iterate_memory_pools_fn(a, OnPool, pool_data);
  if (r.type == HSA_DEVICE_TYPE_GPU) DescribeGpu(a, r, pool_data[1]);
  return HSA_STATUS_SUCCESS;
}

hsa_status_t OnSymbol(hsa_executable_t, hsa_executable_symbol_t sym, void*) {
  hsa_symbol_kind_t kind;
  if (g_core.hsa_executable_symbol_get_info_fn(sym, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, &kind) != HSA_STATUS_SUCCESS ||
      kind != HSA_SYMBOL_KIND_KERNEL)
    return HSA_STATUS_SUCCESS;
  uint64_t object = 0;
  uint32_t len = 0;
  g_core.hsa_executable_symbol_get_info_fn(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &object);
  g_core.hsa_executable_symbol_get_info_fn(sym, HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH, &len);
  std::string name(len, '\0');  // NAME is not NUL-terminated
  g_core.hsa_executable_symbol_get_info_fn(sym, HSA_EXECUTABLE_SYMBOL_INFO_NAME, name.data());
  // Code object v3+ names the kernel descriptor "<kernel>.kd"; HIP kernels are mangled C++.
  if (name.size() > 3 && name.compare(name.size() - 3, 3, ".kd") == 0) name.resize(name.size() - 3);
  if (name.rfind("_Z", 0) == 0) {
    int status = 0;
    char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
    if (status == 0 && d) name = d;
    std::free(d);
  }
  uint32_t id = recorder::Intern(name);
  std::lock_guard<std::mutex> lk(g_mu);
  g_kernels[object] = id;
  return HSA_STATUS_SUCCESS;
}

uint32_t KernelName(uint64_t object) {
  {
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_kernels.find(object);
    if (it != g_kernels.end()) return it->second;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "kernel@0x%llx", static_cast<unsigned long long>(object));
  return recorder::Intern(buf);
}

// --- signals we own ----------------------------------------------------------------------

std::mutex g_signal_mu;
std::vector<hsa_signal_t> g_free_signals;

hsa_signal_t TakeSignal() {
  {
    std::lock_guard<std::mutex> lk(g_signal_mu);
    if (!g_free_signals.empty()) {
      hsa_signal_t s = g_free_signals.back();
      g_free_signals.pop_back();
      return s;
    }
  }
  hsa_signal_t s{0};
  if (g_core.hsa_signal_create_fn(1, 0, nullptr, &s) != HSA_STATUS_SUCCESS) s.handle = 0;
  return s;
}

void ReturnSignal(hsa_signal_t s) {
  g_core.hsa_signal_store_relaxed_fn(s, 1);
  std::lock_guard<std::mutex> lk(g_signal_mu);
  g_free_signals.push_back(s);
}

// --- dispatches and copies in flight ------------------------------------------------------

struct Inflight {
  bool copy = false;
  hsa_signal_t ours{0}, app{0};
  hsa_agent_t agent{0};
  recorder::ExternalStream* stream = nullptr;
  uint64_t correlation = 0;
  uint32_t name = 0;
  uint32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  uint32_t group_segment = 0;
  uint64_t bytes = 0;
  accel::CopyKind kind = accel::CopyKind::kUnknown;
  uint32_t src_device = 0, dst_device = 0;
};

// The program's completion signal completes as the packet would have
// completed it (a decrement), even when timing failed: it may be waiting.
void Finish(Inflight* f) {
  if (f->app.handle) g_core.hsa_signal_subtract_screlease_fn(f->app, 1);
  ReturnSignal(f->ours);
  delete f;
  g_stats.in_flight.fetch_sub(1, std::memory_order_relaxed);
}

// ROCr's async-handler thread, when our signal drops below 1. Must not block.
bool OnDispatchDone(hsa_signal_value_t, void* arg) {
  auto* f = static_cast<Inflight*>(arg);
  hsa_amd_profiling_dispatch_time_t t{};
  if (On() && g_ext.hsa_amd_profiling_get_dispatch_time_fn(f->agent, f->ours, &t) == HSA_STATUS_SUCCESS &&
      t.end >= t.start && t.start) {
    accel::KernelActivity k;
    k.start = ToNs(t.start);
    k.end = ToNs(t.end);
    k.correlation = f->correlation;
    k.name = f->name;
    std::memcpy(k.grid, f->grid, sizeof k.grid);
    std::memcpy(k.block, f->block, sizeof k.block);
    k.shared_dynamic = f->group_segment;
    accel::EmitKernel(f->stream, k);
    g_stats.dispatches_timed.fetch_add(1, std::memory_order_relaxed);
  } else {
    g_stats.untimed.fetch_add(1, std::memory_order_relaxed);
  }
  Finish(f);
  return false;  // one shot
}

bool OnCopyDone(hsa_signal_value_t, void* arg) {
  auto* f = static_cast<Inflight*>(arg);
  hsa_amd_profiling_async_copy_time_t t{};
  if (On() && g_ext.hsa_amd_profiling_get_async_copy_time_fn(f->ours, &t) == HSA_STATUS_SUCCESS && t.end >= t.start &&
      t.start) {
    accel::CopyActivity c;
    c.start = ToNs(t.start);
    c.end = ToNs(t.end);
    c.correlation = f->correlation;
    c.bytes = f->bytes;
    c.kind = f->kind;
    c.src_device = f->src_device;
    c.dst_device = f->dst_device;
    c.src_kind = f->kind == accel::CopyKind::kHtoD || f->kind == accel::CopyKind::kHtoH ? accel::MemoryKind::kPinned
                                                                                        : accel::MemoryKind::kDevice;
    c.dst_kind = f->kind == accel::CopyKind::kDtoH || f->kind == accel::CopyKind::kHtoH ? accel::MemoryKind::kPinned
                                                                                        : accel::MemoryKind::kDevice;
    c.flags = format::kCopyAsync;
    accel::EmitCopy(f->stream, c);
    g_stats.copies_timed.fetch_add(1, std::memory_order_relaxed);
  } else {
    g_stats.untimed.fetch_add(1, std::memory_order_relaxed);
  }
  Finish(f);
  return false;
}

struct QueueCtx {
  hsa_agent_t agent{0};
  uint32_t device = 0;
  uint64_t id = 0;
  recorder::ExternalStream* stream = nullptr;
};

uint32_t GroupsOf(uint32_t items, uint16_t group) { return group ? (items + group - 1) / group : items; }

// The intercept handler: runs on the thread that rang the doorbell, under the
// queue's lock, before the packets reach the hardware queue.
void OnPackets(const void* packets, uint64_t count, uint64_t, void* data, hsa_amd_queue_intercept_packet_writer writer) {
  auto* q = static_cast<QueueCtx*>(data);
  if (!On() || count == 0) {
    writer(packets, count);
    return;
  }
  thread_local std::vector<hsa_kernel_dispatch_packet_t> copy;
  thread_local std::vector<Inflight*> pending;
  const auto* in = static_cast<const hsa_kernel_dispatch_packet_t*>(packets);  // every AQL packet is 64 bytes
  copy.assign(in, in + count);
  pending.clear();
  for (hsa_kernel_dispatch_packet_t& p : copy) {
    unsigned type = (p.header >> HSA_PACKET_HEADER_TYPE) & ((1u << HSA_PACKET_HEADER_WIDTH_TYPE) - 1);
    if (type != HSA_PACKET_TYPE_KERNEL_DISPATCH) continue;
    g_stats.dispatches.fetch_add(1, std::memory_order_relaxed);
    hsa_signal_t ours = TakeSignal();
    if (!ours.handle) {
      g_stats.signal_failures.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    auto* f = new Inflight();
    f->ours = ours;
    f->app = p.completion_signal;
    f->agent = q->agent;
    f->stream = q->stream;
    f->correlation = g_correlation.fetch_add(1, std::memory_order_relaxed) + 1;
    f->name = KernelName(p.kernel_object);
    unsigned dims = p.setup & 3;
    const uint32_t grid[3] = {p.grid_size_x, dims > 1 ? p.grid_size_y : 1, dims > 2 ? p.grid_size_z : 1};
    const uint16_t wg[3] = {p.workgroup_size_x, dims > 1 ? p.workgroup_size_y : uint16_t{1},
                            dims > 2 ? p.workgroup_size_z : uint16_t{1}};
    for (int i = 0; i < 3; ++i) {
      f->grid[i] = GroupsOf(grid[i], wg[i]);  // AQL counts work-items; the model counts work-groups
      f->block[i] = wg[i];
    }
    f->group_segment = p.group_segment_size;
    p.completion_signal = ours;
    // The submission, on the submitting thread, with its correlation id.
    accel::ApiBegin(g_name_dispatch, accel::ApiDomain::kRuntime, f->correlation);
    accel::LaunchArgs l;
    l.correlation = f->correlation;
    l.kernel = f->name;
    std::memcpy(l.grid, f->grid, sizeof l.grid);
    std::memcpy(l.block, f->block, sizeof l.block);
    l.shared_mem = f->group_segment;
    l.device = q->device;
    l.queue = q->id;
    accel::ApiLaunch(l);
    accel::ApiEnd(0);
    pending.push_back(f);
  }
  writer(copy.data(), count);
  for (Inflight* f : pending) {
    g_stats.in_flight.fetch_add(1, std::memory_order_relaxed);
    if (g_ext.hsa_amd_signal_async_handler_fn(f->ours, HSA_SIGNAL_CONDITION_LT, 1, OnDispatchDone, f) !=
        HSA_STATUS_SUCCESS) {
      // Nobody will watch our signal: wait for it here rather than leave the
      // program's signal pending forever.
      g_core.hsa_signal_wait_scacquire_fn(f->ours, HSA_SIGNAL_CONDITION_LT, 1, UINT64_MAX, HSA_WAIT_STATE_BLOCKED);
      OnDispatchDone(0, f);
    }
  }
}

// --- special wrappers ----------------------------------------------------------------------

hsa_status_t W_queue_create(hsa_agent_t agent, uint32_t size, hsa_queue_type32_t type,
                            void (*callback)(hsa_status_t, hsa_queue_t*, void*), void* data, uint32_t priv,
                            uint32_t group, hsa_queue_t** queue) {
  if (!On()) return g_core.hsa_queue_create_fn(agent, size, type, callback, data, priv, group, queue);
  ApiScope scope(k_hsa_queue_create);
  hsa_status_t st = g_ext.hsa_amd_queue_intercept_create_fn(agent, size, type, callback, data, priv, group, queue);
  if (st != HSA_STATUS_SUCCESS) {
    scope.End(st);
    return st;
  }
  g_ext.hsa_amd_profiling_set_profiler_enabled_fn(*queue, 1);
  auto* q = new QueueCtx();  // lives as long as the process: handlers may still run after destroy
  q->agent = agent;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    AgentRec* a = Agent(agent);
    q->device = a ? a->number : format::kHsaDeviceBase;
    q->id = g_next_queue++;
  }
  q->stream = recorder::OpenDeviceStream(q->device, q->id);
  recorder::SetReorderWindow(q->stream, 500'000'000);
  accel::EmitQueueInfo(q->device, q->id, "HSA queue " + std::to_string(q->id));
  st = g_ext.hsa_amd_queue_intercept_register_fn(*queue, OnPackets, q);
  scope.End(st);
  return st;
}

hsa_status_t W_executable_freeze(hsa_executable_t exe, const char* options) {
  ApiScope scope(k_hsa_executable_freeze);
  hsa_status_t st = g_core.hsa_executable_freeze_fn(exe, options);
  if (st == HSA_STATUS_SUCCESS && On()) g_core.hsa_executable_iterate_symbols_fn(exe, OnSymbol, nullptr);
  scope.End(st);
  return st;
}

accel::CopyKind KindOf(bool src_gpu, bool dst_gpu) {
  if (src_gpu && dst_gpu) return accel::CopyKind::kDtoD;
  if (dst_gpu) return accel::CopyKind::kHtoD;
  if (src_gpu) return accel::CopyKind::kDtoH;
  return accel::CopyKind::kHtoH;
}

// A copy whose completion we watch: our signal in, the program's completed after.
hsa_status_t TimedCopy(Api api, uint64_t bytes, accel::CopyKind kind, AgentRec* gpu, uint32_t src_dev,
                       uint32_t dst_dev, hsa_signal_t app, hsa_status_t (*submit)(hsa_signal_t, void*), void* arg) {
  g_stats.copies.fetch_add(1, std::memory_order_relaxed);
  uint64_t corr = g_correlation.fetch_add(1, std::memory_order_relaxed) + 1;
  ApiScope scope(api, corr);
  accel::ApiArg(g_key_bytes, bytes);
  hsa_signal_t ours = gpu ? TakeSignal() : hsa_signal_t{0};
  if (!ours.handle) {
    g_stats.signal_failures.fetch_add(1, std::memory_order_relaxed);
    hsa_status_t st = submit(app, arg);
    scope.End(st);
    return st;
  }
  hsa_status_t st = submit(ours, arg);
  if (st != HSA_STATUS_SUCCESS) {
    ReturnSignal(ours);
    scope.End(st);
    return st;
  }
  auto* f = new Inflight();
  f->copy = true;
  f->ours = ours;
  f->app = app;
  f->stream = gpu->copies;
  f->correlation = corr;
  f->bytes = bytes;
  f->kind = kind;
  f->src_device = src_dev;
  f->dst_device = dst_dev;
  g_stats.in_flight.fetch_add(1, std::memory_order_relaxed);
  if (g_ext.hsa_amd_signal_async_handler_fn(ours, HSA_SIGNAL_CONDITION_LT, 1, OnCopyDone, f) != HSA_STATUS_SUCCESS) {
    g_core.hsa_signal_wait_scacquire_fn(ours, HSA_SIGNAL_CONDITION_LT, 1, UINT64_MAX, HSA_WAIT_STATE_BLOCKED);
    OnCopyDone(0, f);
  }
  scope.End(st);
  return st;
}

hsa_status_t W_async_copy(void* dst, hsa_agent_t dst_agent, const void* src, hsa_agent_t src_agent, size_t size,
                          uint32_t ndep, const hsa_signal_t* deps, hsa_signal_t completion) {
  if (!On()) return g_ext.hsa_amd_memory_async_copy_fn(dst, dst_agent, src, src_agent, size, ndep, deps, completion);
  AgentRec *s, *d, *gpu;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    s = Agent(src_agent);
    d = Agent(dst_agent);
    gpu = GpuOf(src_agent.handle, dst_agent.handle);
  }
  bool sg = s && s->type == HSA_DEVICE_TYPE_GPU, dg = d && d->type == HSA_DEVICE_TYPE_GPU;
  struct Args {
    void* dst;
    hsa_agent_t dst_agent;
    const void* src;
    hsa_agent_t src_agent;
    size_t size;
    uint32_t ndep;
    const hsa_signal_t* deps;
  } a{dst, dst_agent, src, src_agent, size, ndep, deps};
  return TimedCopy(k_hsa_amd_memory_async_copy, size, KindOf(sg, dg), gpu, sg ? s->number : 0, dg ? d->number : 0,
                   completion,
                   [](hsa_signal_t sig, void* p) {
                     auto* x = static_cast<Args*>(p);
                     return g_ext.hsa_amd_memory_async_copy_fn(x->dst, x->dst_agent, x->src, x->src_agent, x->size,
                                                               x->ndep, x->deps, sig);
                   },
                   &a);
}

hsa_status_t W_async_copy_rect(const hsa_pitched_ptr_t* dst, const hsa_dim3_t* dst_offset, const hsa_pitched_ptr_t* src,
                               const hsa_dim3_t* src_offset, const hsa_dim3_t* range, hsa_agent_t copy_agent,
                               hsa_amd_copy_direction_t dir, uint32_t ndep, const hsa_signal_t* deps,
                               hsa_signal_t completion) {
  if (!On())
    return g_ext.hsa_amd_memory_async_copy_rect_fn(dst, dst_offset, src, src_offset, range, copy_agent, dir, ndep, deps,
                                                   completion);
  AgentRec* gpu;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    gpu = GpuOf(copy_agent.handle);
  }
  uint64_t bytes = range ? uint64_t{range->x} * range->y * range->z : 0;  // x is in bytes
  accel::CopyKind kind = dir == hsaHostToDevice ? accel::CopyKind::kHtoD
                         : dir == hsaDeviceToHost ? accel::CopyKind::kDtoH
                         : dir == hsaDeviceToDevice ? accel::CopyKind::kDtoD
                                                    : accel::CopyKind::kHtoH;
  struct Args {
    const hsa_pitched_ptr_t* dst;
    const hsa_dim3_t* dst_offset;
    const hsa_pitched_ptr_t* src;
    const hsa_dim3_t* src_offset;
    const hsa_dim3_t* range;
    hsa_agent_t agent;
    hsa_amd_copy_direction_t dir;
    uint32_t ndep;
    const hsa_signal_t* deps;
  } a{dst, dst_offset, src, src_offset, range, copy_agent, dir, ndep, deps};
  uint32_t dev = gpu ? gpu->number : 0;
  return TimedCopy(k_hsa_amd_memory_async_copy_rect, bytes, kind, gpu, dev, dev, completion,
                   [](hsa_signal_t sig, void* p) {
                     auto* x = static_cast<Args*>(p);
                     return g_ext.hsa_amd_memory_async_copy_rect_fn(x->dst, x->dst_offset, x->src, x->src_offset,
                                                                    x->range, x->agent, x->dir, x->ndep, x->deps, sig);
                   },
                   &a);
}

uint64_t MonoNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

hsa_status_t W_pool_allocate(hsa_amd_memory_pool_t pool, size_t size, uint32_t flags, void** ptr) {
  if (!On()) return g_ext.hsa_amd_memory_pool_allocate_fn(pool, size, flags, ptr);
  uint64_t corr = g_correlation.fetch_add(1, std::memory_order_relaxed) + 1;
  ApiScope scope(k_hsa_amd_memory_pool_allocate, corr);
  accel::ApiArg(g_key_size, size);
  hsa_status_t st = g_ext.hsa_amd_memory_pool_allocate_fn(pool, size, flags, ptr);
  if (st == HSA_STATUS_SUCCESS && ptr && *ptr) {
    AgentRec* gpu = nullptr;
    accel::MemoryKind kind = accel::MemoryKind::kUnknown;
    {
      std::lock_guard<std::mutex> lk(g_mu);
      auto it = g_pools.find(pool.handle);
      uint64_t agent = it != g_pools.end() ? it->second.agent : 0;
      if (it != g_pools.end()) kind = it->second.kind;
      gpu = GpuOf(agent);
      g_allocs[reinterpret_cast<uint64_t>(*ptr)] = {size, agent, kind};
    }
    if (gpu)
      accel::EmitMemory(gpu->allocations, MonoNow(), corr, reinterpret_cast<uint64_t>(*ptr), size,
                        accel::MemoryOp::kAllocate, kind);
  }
  scope.End(st);
  return st;
}

hsa_status_t W_pool_free(void* ptr) {
  if (!On()) return g_ext.hsa_amd_memory_pool_free_fn(ptr);
  uint64_t corr = g_correlation.fetch_add(1, std::memory_order_relaxed) + 1;
  ApiScope scope(k_hsa_amd_memory_pool_free, corr);
  AllocRec a{0, 0, accel::MemoryKind::kUnknown};
  bool known = false;
  AgentRec* gpu = nullptr;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_allocs.find(reinterpret_cast<uint64_t>(ptr));
    if (it != g_allocs.end()) {
      a = it->second;
      known = true;
      g_allocs.erase(it);
      gpu = GpuOf(a.agent);
    }
  }
  hsa_status_t st = g_ext.hsa_amd_memory_pool_free_fn(ptr);
  if (known && gpu)
    accel::EmitMemory(gpu->allocations, MonoNow(), corr, reinterpret_cast<uint64_t>(ptr), a.bytes,
                      accel::MemoryOp::kFree, a.kind);
  scope.End(st);
  return st;
}

// --- lifecycle --------------------------------------------------------------------------------

bool Fits(const ApiTableVersion& v, size_t offset) { return v.minor_id >= offset + sizeof(void*); }

void OnForkChild() { g_on.store(false, std::memory_order_relaxed); }

std::atomic<bool> g_reported{false};

void Report() {
  if (g_reported.exchange(true)) return;
  // Handlers of dispatches still running get a moment (ROCr's thread runs them).
  for (int i = 0; i < 1000 && g_stats.in_flight.load() > 0; ++i) ::usleep(1000);
  ToolStats s = Stats();
  int64_t left = g_stats.in_flight.load();
  std::string detail = std::to_string(s.dispatches_timed) + " of " + std::to_string(s.dispatches) +
                       " kernel dispatches and " + std::to_string(s.copies_timed) + " of " + std::to_string(s.copies) +
                       " async copies timed; " + std::to_string(s.api_calls) + " HSA API calls (HSA_TOOLS_LIB)";
  bool partial = false;
  if (left > 0) detail += "; " + std::to_string(left) + " still running at exit (not recorded)", partial = true;
  if (s.untimed) detail += "; " + std::to_string(s.untimed) + " without profiling times", partial = true;
  if (s.signal_failures)
    detail += "; " + std::to_string(s.signal_failures) + " passed through untimed (no signal)", partial = true;
  recorder::ReportCollectorStatus("hsa", partial ? "partial" : "ok", detail);
}

void AtExit() {
  if (On()) Report();
}

}  // namespace

bool Load(HsaApiTable* table) {
  if (!table || !table->core_ || !table->amd_ext_) return false;
  CoreApiTable* core = table->core_;
  AmdExtTable* ext = table->amd_ext_;
  // minor_id is sizeof(table) in the runtime's build: touch only what exists there.
  if (!Fits(ext->version, offsetof(AmdExtTable, hsa_amd_queue_intercept_register_fn)) ||
      !Fits(core->version, offsetof(CoreApiTable, hsa_executable_iterate_symbols_fn))) {
    recorder::ReportCollectorStatus("hsa", "unavailable",
                                    "the HSA runtime's API tables are smaller than ROCm 5.2's; HSA not recorded");
    return false;
  }
  std::memset(&g_core, 0, sizeof g_core);
  std::memset(&g_ext, 0, sizeof g_ext);
  std::memcpy(&g_core, core, std::min<size_t>(sizeof g_core, core->version.minor_id));
  std::memcpy(&g_ext, ext, std::min<size_t>(sizeof g_ext, ext->version.minor_id));
  if (!recorder::Active()) return true;  // loaded outside `strata record`: change nothing

  for (uint32_t i = 0; i < kApiCount; ++i) g_name[i] = recorder::Intern(kApiNames[i]);
  g_name_dispatch = recorder::Intern("AQL kernel dispatch");
  g_key_bytes = recorder::Intern("bytes");
  g_key_size = recorder::Intern("size");
  uint64_t freq = 0;
  if (g_core.hsa_system_get_info_fn(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &freq) == HSA_STATUS_SUCCESS && freq)
    g_clock.ns_per_tick = 1e9 / static_cast<double>(freq);
  MeasureClock();
  {
    std::lock_guard<std::mutex> lk(g_mu);
    g_core.hsa_iterate_agents_fn(OnAgent, nullptr);
  }
  // Timestamps of async copies must be switched on before the copies.
  g_ext.hsa_amd_profiling_async_copy_enable_fn(true);

  const char* sel = ::secure_getenv("STRATA_HSA_API");
  bool all = sel && std::strcmp(sel, "all") == 0;
#define STRATA_HSA_WRAP(T, table_ptr, n)                                                   \
  if (Fits(table_ptr->version, offsetof(T, n##_fn)) && table_ptr->n##_fn) {               \
    g_saved[k_##n] = reinterpret_cast<void*>(table_ptr->n##_fn);                           \
    if (all || !Hot(#n)) table_ptr->n##_fn = &Traced<k_##n, decltype(table_ptr->n##_fn)>::Call; \
  }
#define STRATA_HSA_WRAP_CORE(n) STRATA_HSA_WRAP(CoreApiTable, core, n)
#define STRATA_HSA_WRAP_AMD(n) STRATA_HSA_WRAP(AmdExtTable, ext, n)
  STRATA_HSA_CORE_APIS(STRATA_HSA_WRAP_CORE)
  STRATA_HSA_AMD_APIS(STRATA_HSA_WRAP_AMD)
#undef STRATA_HSA_WRAP_AMD
#undef STRATA_HSA_WRAP_CORE
#undef STRATA_HSA_WRAP
  core->hsa_queue_create_fn = W_queue_create;
  core->hsa_executable_freeze_fn = W_executable_freeze;
  ext->hsa_amd_memory_async_copy_fn = W_async_copy;
  if (Fits(ext->version, offsetof(AmdExtTable, hsa_amd_memory_async_copy_rect_fn)) && g_ext.hsa_amd_memory_async_copy_rect_fn)
    ext->hsa_amd_memory_async_copy_rect_fn = W_async_copy_rect;
  ext->hsa_amd_memory_pool_allocate_fn = W_pool_allocate;
  ext->hsa_amd_memory_pool_free_fn = W_pool_free;

  pthread_atfork(nullptr, nullptr, OnForkChild);
  std::atexit(AtExit);
  g_on.store(true, std::memory_order_release);
  recorder::ReportCollectorStatus("hsa", "ok", "HSA tools library active (" + std::to_string(g_gpus) + " GPU agents)");
  return true;
}

void Unload() {
  if (On()) Report();
}

ToolStats Stats() {
  ToolStats s;
  s.api_calls = g_stats.api_calls.load();
  s.dispatches = g_stats.dispatches.load();
  s.dispatches_timed = g_stats.dispatches_timed.load();
  s.copies = g_stats.copies.load();
  s.copies_timed = g_stats.copies_timed.load();
  s.untimed = g_stats.untimed.load();
  s.signal_failures = g_stats.signal_failures.load();
  return s;
}

}  // namespace strata::hsa

extern "C" {

// Called by ROCr inside the first hsa_init, after agent discovery. Returning
// false makes the runtime unload the library.
__attribute__((visibility("default"))) bool OnLoad(HsaApiTable* table, uint64_t runtime_version,
                                                   uint64_t failed_tool_count, const char* const* failed_tool_names) {
  (void)runtime_version;
  (void)failed_tool_count;
  (void)failed_tool_names;
  return strata::hsa::Load(table);
}

// Called from hsa_shut_down (the last reference), before the table is reset.
__attribute__((visibility("default"))) void OnUnload() { strata::hsa::Unload(); }

}  // extern "C"
