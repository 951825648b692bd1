// The AMD collector without an AMD GPU: OnLoad gets an API table of fake
// runtime functions that fill the runtime's own structs (agents, pools, AQL
// packets written to the hardware queue, dispatch and copy profiling times,
// executable symbols), and a fake GPU that runs the packets the tool submits.
// The tool records into an in-process recorder; the trace is read back.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "collectors/hsa/hsa_tool.h"
#include "recorder/runtime_internal.h"
#include "tests/testing.h"

extern "C" bool OnLoad(HsaApiTable* table, uint64_t runtime_version, uint64_t failed_tool_count,
                       const char* const* failed_tool_names);
extern "C" void OnUnload();

namespace strata {
namespace {

using model::SliceKind;
using testing::Load;
using testing::TempDir;

// --- a fake ROCr ------------------------------------------------------------------------

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

constexpr uint64_t kCpu = 1, kGpu = 2;
constexpr uint64_t kCpuPool = 10, kGpuPool = 20, kGpuFinePool = 21;
constexpr uint64_t kKernelObject = 0xabc0;

struct FakeSignal {
  std::atomic<int64_t> value;
};
struct Handler {
  hsa_signal_t signal;
  hsa_amd_signal_handler fn;
  void* arg;
};

struct Rocr {
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> times;  // signal -> start/end ticks
  std::vector<Handler> handlers;
  std::vector<hsa_kernel_dispatch_packet_t> submitted;  // what reached the hardware queue
  std::vector<hsa_kernel_dispatch_packet_t> queue;      // not run yet
  hsa_amd_queue_intercept_handler intercept = nullptr;
  void* intercept_data = nullptr;
  int profiled_queues = 0;
  bool copy_profiling = false;
  bool defer = false;  // the GPU runs packets when RunGpu() says so
} g;

int64_t Value(hsa_signal_t s) { return reinterpret_cast<FakeSignal*>(s.handle)->value.load(); }

void FireHandlers() {
  for (size_t i = 0; i < g.handlers.size();) {
    Handler h = g.handlers[i];
    if (Value(h.signal) < 1) {
      g.handlers.erase(g.handlers.begin() + static_cast<long>(i));
      h.fn(Value(h.signal), h.arg);
    } else {
      ++i;
    }
  }
}

void Complete(hsa_signal_t s, uint64_t start, uint64_t dur) {
  g.times[s.handle] = {start, start + dur};
  if (s.handle) reinterpret_cast<FakeSignal*>(s.handle)->value.fetch_sub(1);
}

void RunGpu() {
  for (auto& p : g.queue) Complete(p.completion_signal, NowNs(), 5000);
  g.queue.clear();
  FireHandlers();
}

void Writer(const void* pkts, uint64_t count) {
  const auto* p = static_cast<const hsa_kernel_dispatch_packet_t*>(pkts);
  for (uint64_t i = 0; i < count; ++i) {
    g.submitted.push_back(p[i]);
    unsigned type = p[i].header & 0xff;
    if (type == HSA_PACKET_TYPE_KERNEL_DISPATCH) g.queue.push_back(p[i]);
  }
  if (!g.defer) RunGpu();
}

hsa_status_t SignalCreate(hsa_signal_value_t v, uint32_t, const hsa_agent_t*, hsa_signal_t* s) {
  auto* x = new FakeSignal();
  x->value = v;
  s->handle = reinterpret_cast<uint64_t>(x);
  return HSA_STATUS_SUCCESS;
}
hsa_status_t SignalDestroy(hsa_signal_t s) {
  delete reinterpret_cast<FakeSignal*>(s.handle);
  return HSA_STATUS_SUCCESS;
}
void SignalStore(hsa_signal_t s, hsa_signal_value_t v) { reinterpret_cast<FakeSignal*>(s.handle)->value = v; }
void SignalSubtract(hsa_signal_t s, hsa_signal_value_t v) { reinterpret_cast<FakeSignal*>(s.handle)->value -= v; }
hsa_signal_value_t SignalLoad(hsa_signal_t s) { return Value(s); }
hsa_signal_value_t SignalWait(hsa_signal_t s, hsa_signal_condition_t, hsa_signal_value_t, uint64_t, hsa_wait_state_t) {
  return Value(s);
}
hsa_status_t AsyncHandler(hsa_signal_t s, hsa_signal_condition_t, hsa_signal_value_t, hsa_amd_signal_handler fn,
                          void* arg) {
  g.handlers.push_back({s, fn, arg});
  FireHandlers();  // a condition already met fires at once, as in ROCr
  return HSA_STATUS_SUCCESS;
}

hsa_status_t SystemInfo(hsa_system_info_t what, void* v) {
  if (what == HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY) *static_cast<uint64_t*>(v) = 1000000000;  // KFD: 1 GHz
  else if (what == HSA_SYSTEM_INFO_TIMESTAMP) *static_cast<uint64_t*>(v) = NowNs();
  else return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  return HSA_STATUS_SUCCESS;
}
hsa_status_t IterateAgents(hsa_status_t (*cb)(hsa_agent_t, void*), void* data) {
  for (uint64_t a : {kCpu, kGpu}) cb(hsa_agent_t{a}, data);
  return HSA_STATUS_SUCCESS;
}
hsa_status_t AgentInfo(hsa_agent_t a, hsa_agent_info_t what, void* v) {
  auto str = [v](const char* s) { std::strncpy(static_cast<char*>(v), s, 64); };
  switch (static_cast<int>(what)) {
    case HSA_AGENT_INFO_DEVICE:
      *static_cast<hsa_device_type_t*>(v) = a.handle == kGpu ? HSA_DEVICE_TYPE_GPU : HSA_DEVICE_TYPE_CPU;
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_NAME: str(a.handle == kGpu ? "gfx90a" : "AMD EPYC"); return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_VENDOR_NAME: str("AMD"); return HSA_STATUS_SUCCESS;
    case HSA_AMD_AGENT_INFO_PRODUCT_NAME: str("AMD Instinct MI250X"); return HSA_STATUS_SUCCESS;
    case HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT: *static_cast<uint32_t*>(v) = 110; return HSA_STATUS_SUCCESS;
    case HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY: *static_cast<uint32_t*>(v) = 1700; return HSA_STATUS_SUCCESS;
    case HSA_AMD_AGENT_INFO_MEMORY_WIDTH: *static_cast<uint32_t*>(v) = 4096; return HSA_STATUS_SUCCESS;
    case HSA_AMD_AGENT_INFO_MEMORY_MAX_FREQUENCY: *static_cast<uint32_t*>(v) = 1600; return HSA_STATUS_SUCCESS;
    default: return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}
hsa_status_t IteratePools(hsa_agent_t a, hsa_status_t (*cb)(hsa_amd_memory_pool_t, void*), void* data) {
  if (a.handle == kCpu) return cb({kCpuPool}, data);
  cb({kGpuPool}, data);
  return cb({kGpuFinePool}, data);
}
hsa_status_t PoolInfo(hsa_amd_memory_pool_t p, hsa_amd_memory_pool_info_t what, void* v) {
  switch (what) {
    case HSA_AMD_MEMORY_POOL_INFO_SEGMENT: *static_cast<uint32_t*>(v) = HSA_AMD_SEGMENT_GLOBAL; break;
    case HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS:
      *static_cast<uint32_t*>(v) = p.handle == kGpuPool ? HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED
                                                        : HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED;
      break;
    case HSA_AMD_MEMORY_POOL_INFO_SIZE: *static_cast<size_t*>(v) = 64ull << 30; break;
    default: return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  return HSA_STATUS_SUCCESS;
}
hsa_status_t PoolAllocate(hsa_amd_memory_pool_t, size_t size, uint32_t, void** ptr) {
  *ptr = std::malloc(size);
  return HSA_STATUS_SUCCESS;
}
hsa_status_t PoolFree(void* ptr) {
  std::free(ptr);
  return HSA_STATUS_SUCCESS;
}
hsa_status_t CopyEnable(bool on) {
  g.copy_profiling = on;
  return HSA_STATUS_SUCCESS;
}
hsa_status_t SetProfiler(hsa_queue_t*, int on) {
  g.profiled_queues += on;
  return HSA_STATUS_SUCCESS;
}
hsa_status_t InterceptCreate(hsa_agent_t, uint32_t, hsa_queue_type32_t, void (*)(hsa_status_t, hsa_queue_t*, void*),
                             void*, uint32_t, uint32_t, hsa_queue_t** q) {
  *q = new hsa_queue_t();
  return HSA_STATUS_SUCCESS;
}
hsa_status_t InterceptRegister(hsa_queue_t*, hsa_amd_queue_intercept_handler h, void* data) {
  g.intercept = h;
  g.intercept_data = data;
  return HSA_STATUS_SUCCESS;
}
hsa_status_t DispatchTime(hsa_agent_t, hsa_signal_t s, hsa_amd_profiling_dispatch_time_t* t) {
  auto it = g.times.find(s.handle);
  if (it == g.times.end()) return HSA_STATUS_ERROR;
  t->start = it->second.first;
  t->end = it->second.second;
  return HSA_STATUS_SUCCESS;
}
hsa_status_t CopyTime(hsa_signal_t s, hsa_amd_profiling_async_copy_time_t* t) {
  auto it = g.times.find(s.handle);
  if (it == g.times.end()) return HSA_STATUS_ERROR;
  t->start = it->second.first;
  t->end = it->second.second;
  return HSA_STATUS_SUCCESS;
}
hsa_status_t AsyncCopy(void*, hsa_agent_t, const void*, hsa_agent_t, size_t size, uint32_t, const hsa_signal_t*,
                       hsa_signal_t done) {
  Complete(done, NowNs() + 1000, size / 10);  // a 10 B/ns (10 GB/s) engine
  return HSA_STATUS_SUCCESS;
}
hsa_status_t Freeze(hsa_executable_t, const char*) { return HSA_STATUS_SUCCESS; }
hsa_status_t IterateSymbols(hsa_executable_t e, hsa_status_t (*cb)(hsa_executable_t, hsa_executable_symbol_t, void*),
                            void* data) {
  cb(e, {100}, data);  // a kernel
  return cb(e, {101}, data);  // a variable
}
const char kMangled[] = "_Z10vector_addPfS_S_i.kd";
hsa_status_t SymbolInfo(hsa_executable_symbol_t s, hsa_executable_symbol_info_t what, void* v) {
  switch (what) {
    case HSA_EXECUTABLE_SYMBOL_INFO_TYPE:
      *static_cast<hsa_symbol_kind_t*>(v) = s.handle == 100 ? HSA_SYMBOL_KIND_KERNEL : HSA_SYMBOL_KIND_VARIABLE;
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT: *static_cast<uint64_t*>(v) = kKernelObject; return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH: *static_cast<uint32_t*>(v) = sizeof kMangled - 1; return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_NAME: std::memcpy(v, kMangled, sizeof kMangled - 1); return HSA_STATUS_SUCCESS;
    default: return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}
hsa_status_t QueueCreate(hsa_agent_t, uint32_t, hsa_queue_type32_t, void (*)(hsa_status_t, hsa_queue_t*, void*), void*,
                         uint32_t, uint32_t, hsa_queue_t**) {
  return HSA_STATUS_ERROR;  // the tool must use the intercept queue instead
}

struct Tables {
  CoreApiTable core{};
  AmdExtTable ext{};
  HsaApiTable table{};
  Tables() {
    core.version = {1, sizeof core, 0, 0};
    ext.version = {1, sizeof ext, 0, 0};
    table.version = {1, sizeof table, 0, 0};
    table.core_ = &core;
    table.amd_ext_ = &ext;
    core.hsa_system_get_info_fn = SystemInfo;
    core.hsa_iterate_agents_fn = IterateAgents;
    core.hsa_agent_get_info_fn = AgentInfo;
    core.hsa_signal_create_fn = SignalCreate;
    core.hsa_signal_destroy_fn = SignalDestroy;
    core.hsa_signal_store_relaxed_fn = SignalStore;
    core.hsa_signal_subtract_screlease_fn = SignalSubtract;
    core.hsa_signal_load_relaxed_fn = SignalLoad;
    core.hsa_signal_wait_scacquire_fn = SignalWait;
    core.hsa_queue_create_fn = QueueCreate;
    core.hsa_executable_freeze_fn = Freeze;
    core.hsa_executable_iterate_symbols_fn = IterateSymbols;
    core.hsa_executable_symbol_get_info_fn = SymbolInfo;
    ext.hsa_amd_agent_iterate_memory_pools_fn = IteratePools;
    ext.hsa_amd_memory_pool_get_info_fn = PoolInfo;
    ext.hsa_amd_memory_pool_allocate_fn = PoolAllocate;
    ext.hsa_amd_memory_pool_free_fn = PoolFree;
    ext.hsa_amd_profiling_async_copy_enable_fn = CopyEnable;
    ext.hsa_amd_profiling_set_profiler_enabled_fn = SetProfiler;
    ext.hsa_amd_queue_intercept_create_fn = InterceptCreate;
    ext.hsa_amd_queue_intercept_register_fn = InterceptRegister;
    ext.hsa_amd_profiling_get_dispatch_time_fn = DispatchTime;
    ext.hsa_amd_profiling_get_async_copy_time_fn = CopyTime;
    ext.hsa_amd_signal_async_handler_fn = AsyncHandler;
    ext.hsa_amd_memory_async_copy_fn = AsyncCopy;
  }
};

hsa_kernel_dispatch_packet_t Dispatch(hsa_signal_t done) {
  hsa_kernel_dispatch_packet_t p{};
  p.header = HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE;
  p.setup = 2;  // two dimensions
  p.workgroup_size_x = 256;
  p.workgroup_size_y = 2;
  p.workgroup_size_z = 1;
  p.grid_size_x = 65536;
  p.grid_size_y = 7;  // not a multiple of the group: the last group is partial
  p.grid_size_z = 1;
  p.group_segment_size = 1024;
  p.kernel_object = kKernelObject;
  p.completion_signal = done;
  return p;
}

model::Trace RunScenario(const std::string& name, const std::function<int(Tables&)>& scenario) {
  std::string dir = TempDir(name);
  pid_t pid = ::fork();
  if (pid == 0) {
    recorder::Config cfg;
    cfg.dir = dir;
    if (!recorder::Start(cfg).ok()) ::_exit(3);
    Tables t;
    if (!OnLoad(&t.table, 0, 0, nullptr)) ::_exit(4);
    int rc = scenario(t);
    OnUnload();
    recorder::Finalize();
    ::_exit(rc);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "scenario check failed inside the traced process";
  return Load(dir);
}

std::string Name(const model::Trace& t, size_t s) { return std::string(t.strings.Get(t.slices.name[s])); }

TEST(Hsa, DispatchesCopiesAllocationsAndApiCallsIntoTheDeviceModel) {
  model::Trace t = RunScenario("hsa_all", [](Tables& tb) {
    CoreApiTable& core = tb.core;
    AmdExtTable& ext = tb.ext;
    // Every entry is wrapped except the per-packet ones.
    if (core.hsa_agent_get_info_fn == AgentInfo || core.hsa_signal_load_relaxed_fn != SignalLoad) return 10;
    char name[64];
    core.hsa_agent_get_info_fn(hsa_agent_t{kGpu}, HSA_AGENT_INFO_NAME, name);
    core.hsa_executable_freeze_fn(hsa_executable_t{1}, "");
    hsa_queue_t* q = nullptr;
    if (core.hsa_queue_create_fn(hsa_agent_t{kGpu}, 64, HSA_QUEUE_TYPE_MULTI, nullptr, nullptr, 0, 0, &q) !=
            HSA_STATUS_SUCCESS ||
        !g.intercept || g.profiled_queues != 1 || !g.copy_profiling)
      return 11;
    // The program rings the doorbell; the runtime hands the packets to the tool.
    hsa_signal_t done;
    core.hsa_signal_create_fn(1, 0, nullptr, &done);
    hsa_kernel_dispatch_packet_t pkts[3] = {Dispatch(done), Dispatch(hsa_signal_t{0}), {}};
    pkts[2].header = HSA_PACKET_TYPE_BARRIER_AND << HSA_PACKET_HEADER_TYPE;
    g.defer = true;
    g.intercept(pkts, 3, 0, g.intercept_data, Writer);
    // Our signals replaced the program's; the barrier went through untouched.
    if (g.submitted.size() != 3 || g.submitted[0].completion_signal.handle == done.handle ||
        g.submitted[2].header != pkts[2].header)
      return 12;
    if (Value(done) != 1) return 13;  // not before the GPU ran it
    RunGpu();
    if (Value(done) != 0) return 14;  // completed for the program, as the packet would have
    // An async copy host -> GPU, and pool memory.
    hsa_signal_t copied;
    core.hsa_signal_create_fn(1, 0, nullptr, &copied);
    std::vector<char> host(1 << 20);
    ext.hsa_amd_memory_async_copy_fn(nullptr, hsa_agent_t{kGpu}, host.data(), hsa_agent_t{kCpu}, host.size(), 0,
                                     nullptr, copied);
    if (Value(copied) != 0) return 15;
    void* mem = nullptr;
    ext.hsa_amd_memory_pool_allocate_fn(hsa_amd_memory_pool_t{kGpuPool}, 4 << 20, 0, &mem);
    ext.hsa_amd_memory_pool_free_fn(mem);
    return 0;
  });
  // Kernels: named from the executable, sizes in work-groups, timed by the runtime's ticks.
  std::vector<size_t> kernels;
  for (size_t s = 0; s < t.slices.size(); ++s)
    if (t.slices.kind[s] == SliceKind::kKernel) kernels.push_back(s);
  ASSERT_EQ(kernels.size(), 2u);
  for (size_t k : kernels) {
    EXPECT_EQ(Name(t, k), "vector_add(float*, float*, float*, int)");
    EXPECT_EQ(t.slices.dur[k], 5000);
    auto r = static_cast<size_t>(t.device_row_of_slice[k]);
    EXPECT_EQ(t.device.device[r], 128);
    EXPECT_EQ(t.device.grid[r], (std::array<uint32_t, 3>{256, 4, 1}));
    EXPECT_EQ(t.device.block[r], (std::array<uint32_t, 3>{256, 2, 1}));
    EXPECT_EQ(t.device.shared_mem[r], 1024u);
    ASSERT_NE(t.device.launch[r], model::kNone);
    auto api = static_cast<size_t>(t.device.launch[r]);
    EXPECT_EQ(Name(t, api), "AQL kernel dispatch");
    EXPECT_LE(t.slices.ts[api], t.slices.ts[k]);
    EXPECT_EQ(std::string(t.strings.Get(t.tracks[t.slices.track[k]].name)), "HSA queue 1");
  }
  // The copy: direction from the agents, exact bytes, its API call.
  size_t copies = 0;
  for (size_t r = 0; r < t.device.size(); ++r) {
    uint32_t s = t.device.slice[r];
    if (t.slices.kind[s] != SliceKind::kMemcpy) continue;
    ++copies;
    EXPECT_EQ(t.device.copy_kind[r], model::CopyKind::kHtoD);
    EXPECT_EQ(t.device.bytes[r], 1u << 20);
    EXPECT_EQ(t.slices.dur[s], (1 << 20) / 10);
    ASSERT_NE(t.device.launch[r], model::kNone);
    EXPECT_EQ(Name(t, static_cast<size_t>(t.device.launch[r])), "hsa_amd_memory_async_copy");
    EXPECT_EQ(std::string(t.strings.Get(t.tracks[t.slices.track[s]].name)), "HSA async copies");
  }
  EXPECT_EQ(copies, 1u);
  // Pool memory: allocated then freed on the GPU.
  ASSERT_EQ(t.memory.size(), 2u);
  EXPECT_EQ(t.memory.bytes[0] + t.memory.bytes[1], 0);
  EXPECT_EQ(std::max(t.memory.bytes[0], t.memory.bytes[1]), 4 << 20);
  EXPECT_EQ(t.memory.device[0], 128);
  // API calls, generic and special.
  std::set<std::string> apis;
  for (size_t s = 0; s < t.slices.size(); ++s)
    if (t.slices.kind[s] == SliceKind::kRuntime) apis.insert(Name(t, s));
  for (const char* a : {"hsa_agent_get_info", "hsa_queue_create", "hsa_executable_freeze", "hsa_signal_create",
                        "hsa_amd_memory_pool_allocate", "hsa_amd_memory_pool_free", "hsa_amd_memory_async_copy"})
    EXPECT_TRUE(apis.count(a)) << a;
  EXPECT_FALSE(apis.count("hsa_signal_load_relaxed"));
  // The GPU agent, described.
  ASSERT_EQ(t.devices.size(), 1u);
  const model::Device& d = t.devices[0];
  EXPECT_EQ(d.id, 128);
  EXPECT_EQ(d.api, "hsa");
  EXPECT_EQ(d.name, "AMD Instinct MI250X");
  EXPECT_EQ(d.compute_units, 110u);
  EXPECT_EQ(d.clock_khz, 1700000u);
  EXPECT_EQ(d.memory_bytes, 64ull << 30);
  EXPECT_DOUBLE_EQ(d.memory_bandwidth, 4096 / 8.0 * 1600e6 * 2);
  EXPECT_DOUBLE_EQ(d.peak_flops_f32, 110 * 64.0 * 2 * 1.7e9);
  EXPECT_DOUBLE_EQ(d.peak_flops_f64, d.peak_flops_f32);  // gfx90a: full-rate FP64
  bool ok = false;
  for (const auto& c : t.collectors)
    if (c.collector == "hsa" && c.detail.find("2 of 2 kernel dispatches") != std::string::npos) ok = c.state == "ok";
  EXPECT_TRUE(ok);
}

TEST(Hsa, TablesFromAnOlderRuntimeAreRefused) {
  std::string dir = TempDir("hsa_old");
  pid_t pid = ::fork();
  if (pid == 0) {
    recorder::Config cfg;
    cfg.dir = dir;
    if (!recorder::Start(cfg).ok()) ::_exit(3);
    Tables t;
    t.ext.version.minor_id = offsetof(AmdExtTable, hsa_amd_queue_intercept_create_fn);  // too small
    bool loaded = OnLoad(&t.table, 0, 0, nullptr);
    recorder::Finalize();
    ::_exit(loaded ? 1 : 0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "OnLoad accepted a table it would have read past";
  model::Trace t = Load(dir);
  ASSERT_EQ(t.collectors.size(), 1u);
  EXPECT_EQ(t.collectors[0].state, "unavailable");
}

}  // namespace
}  // namespace strata
