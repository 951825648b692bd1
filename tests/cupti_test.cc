// The CUDA collector without a GPU: every decoding path is fed CUPTI's own
// structs (activity records in real CUPTI buffers, iterated by libcupti;
// callback data with the runtime's parameter structs) as the driver would fill
// them, recorded by an in-process recorder into a trace, and read back through
// the importer into the model.
#include <gtest/gtest.h>

#include <cupti.h>
#include <nvtx3/nvToolsExt.h>
#include <generated_nvtx_meta.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <map>
#include <set>
#include <functional>
#include <thread>

#include "collectors/cupti/collector_session.h"
#include "collectors/cupti/range_profiler.h"
#include "recorder/runtime_internal.h"
#include "tests/cupti_harness.h"
#include "tests/testing.h"

namespace strata {
namespace {

using namespace cupti_harness;  // NOLINT: the harness is this test's vocabulary

// --- kernels and launches ----------------------------------------------------------

TEST_F(Cupti, KernelLaunchesLinkTheirApiCallsToTheirKernels) {
  model::Trace t = RunScenario("cupti_kernels", [](cupti::Session& s) {
    // cudaLaunchKernel, CUDA 13's __cudaLaunchKernel (<<<>>>), cudaLaunchKernelExC,
    // and a driver launch made directly (as Triton does).
    cudaLaunchKernel_v7000_params rt{};
    rt.gridDim = {64, 2, 1};
    rt.blockDim = {256, 1, 1};
    rt.sharedMem = 1024;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = {8, 8, 1};
    cfg.blockDim = {32, 4, 1};
    cfg.dynamicSmemBytes = 2048;
    cudaLaunchKernelExC_v11060_params ex{};
    ex.config = &cfg;
    cuLaunchKernel_params drv{};
    drv.gridDimX = 128, drv.gridDimY = 1, drv.gridDimZ = 1;
    drv.blockDimX = 128, drv.blockDimY = 1, drv.blockDimZ = 1;
    drv.sharedMemBytes = 0;
    uint64_t t0 = Now();
    Call(s, {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &rt, "_Z6squarePfi", 11});
    Call(s, {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, &rt, "_Z6squarePfi", 12});
    Call(s, {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, &ex, "_Z4gemmv", 13});
    Call(s, {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &drv, "triton_poi_fused_0", 14});
    uint64_t t1 = Now();
    Buffer(s)
        .Add(Kernel(11, t1 + 1000, 5000, 7, "_Z6squarePfi"))
        .Add(Kernel(12, t1 + 7000, 5000, 7, "_Z6squarePfi"))
        .Add(Kernel(13, t1 + 13000, 3000, 13, "_Z4gemmv"))
        .Add(Kernel(14, t1 + 17000, 1000, 7, "triton_poi_fused_0"))
        .Complete();
    (void)t0;
    // Concurrent kernels, never the serializing KERNEL kind.
    bool concurrent = false, serial = false;
    for (auto k : Fake::enabled) {
      concurrent = concurrent || k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
      serial = serial || k == CUPTI_ACTIVITY_KIND_KERNEL;
    }
    if (!concurrent || serial) ::_exit(6);
  });
  auto kernels = Slices(t, SliceKind::kKernel);
  ASSERT_EQ(kernels.size(), 4u);
  std::map<std::string, int> apis;
  for (size_t k : kernels) {
    int32_t row = t.device_row_of_slice[k];
    ASSERT_NE(row, model::kNone);
    auto r = static_cast<size_t>(row);
    EXPECT_EQ(t.tracks[t.slices.track[k]].kind, model::TrackKind::kDeviceQueue);
    EXPECT_EQ(t.device.device[r], 0);
    EXPECT_EQ(t.device.grid[r], (std::array<uint32_t, 3>{64, 2, 1}));  // the activity record's, not the call's
    EXPECT_EQ(t.device.block[r], (std::array<uint32_t, 3>{256, 1, 1}));
    EXPECT_EQ(t.device.shared_mem[r], 1536u);
    EXPECT_EQ(t.device.registers[r], 32u);
    ASSERT_NE(t.device.launch[r], model::kNone) << Name(t, k);
    auto api = static_cast<size_t>(t.device.launch[r]);
    EXPECT_EQ(t.tracks[t.slices.track[api]].kind, model::TrackKind::kThread);
    ++apis[Name(t, api)];
    EXPECT_LE(t.slices.end(api), t.slices.ts[k]) << "kernel before its launch returned";
    bool flow = false;
    for (size_t f = 0; f < t.flows.size(); ++f)
      flow = flow || (t.flows.from[f] == t.device.launch[r] && t.flows.to[f] == static_cast<int32_t>(k));
    EXPECT_TRUE(flow);
    if (Name(t, api) == "cuLaunchKernel") {
      EXPECT_EQ(t.slices.kind[api], SliceKind::kDriver);
      EXPECT_EQ(Name(t, k), "triton_poi_fused_0");
      EXPECT_EQ(Arg(t, api, "grid"), "128x1x1");
      EXPECT_EQ(Arg(t, api, "block"), "128x1x1");
    } else {
      EXPECT_EQ(t.slices.kind[api], SliceKind::kRuntime);
    }
    if (Name(t, api) == "cudaLaunchKernel" || Name(t, api) == "__cudaLaunchKernel") {
      EXPECT_EQ(Name(t, k), "square(float*, int)") << "demangled";
      EXPECT_EQ(Arg(t, api, "kernel"), "square(float*, int)");
      EXPECT_EQ(Arg(t, api, "grid"), "64x2x1");
      EXPECT_EQ(Arg(t, api, "block"), "256x1x1");
      EXPECT_EQ(Arg(t, api, "shared_mem"), "1024");
    }
    if (Name(t, api) == "cudaLaunchKernelExC") {
      EXPECT_EQ(Arg(t, api, "grid"), "8x8x1");
      EXPECT_EQ(Arg(t, api, "block"), "32x4x1");
      EXPECT_EQ(Arg(t, api, "shared_mem"), "2048");
    }
  }
  EXPECT_EQ(apis, (std::map<std::string, int>{
                      {"cudaLaunchKernel", 1}, {"__cudaLaunchKernel", 1}, {"cudaLaunchKernelExC", 1}, {"cuLaunchKernel", 1}}));
  // Streams become named device-queue tracks.
  int named = 0;
  for (const auto& trk : t.tracks)
    if (trk.kind == model::TrackKind::kDeviceQueue)
      named += std::string(t.strings.Get(trk.name)) == "CUDA stream " + std::to_string(trk.tid);
  EXPECT_EQ(named, 2);
  EXPECT_EQ(Collector(t, "cuda")->state, "ok") << Collector(t, "cuda")->detail;
}

TEST_F(Cupti, DriverCallsInsideRuntimeCallsAreLeftOut) {
  model::Trace t = RunScenario("cupti_nested", [](cupti::Session& s) {
    cudaLaunchKernel_v7000_params rt{};
    rt.gridDim = {1, 1, 1};
    rt.blockDim = {32, 1, 1};
    cuLaunchKernel_params drv{};
    ApiCall outer{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &rt, "k", 21};
    ApiCall inner{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &drv, "k", 22};
    uint64_t a = 0, b = 0;
    Enter(s, outer, &a);
    Enter(s, inner, &b);
    Exit(s, inner, &b);
    Exit(s, outer, &a);
  });
  auto rt = Slices(t, SliceKind::kRuntime);
  ASSERT_EQ(rt.size(), 1u);
  EXPECT_EQ(Name(t, rt[0]), "cudaLaunchKernel");
  EXPECT_TRUE(Slices(t, SliceKind::kDriver).empty());
}

// Kernels and copies whose values fit are written in the narrow forms (kernel32,
// memcpy32); the others in the wide ones. Both read back to the same model fields.
TEST_F(Cupti, KernelsAndCopiesTooWideForTheNarrowFormsKeepEveryField) {
  std::string dir;
  uint64_t t1 = 0;
  model::Trace t = RunScenario("cupti_wide", [&](cupti::Session& s) {
    t1 = Now();
    CUpti_ActivityKernel10 narrow = Kernel(1, t1 + 1000, 5000, 7, "narrow");
    narrow.gridX = 0x7fffffff;  // CUDA's largest grid still fits
    CUpti_ActivityKernel10 latency = Kernel(2, t1 + 7000, 5000, 7, "latency");
    latency.queued = t1 + 100;
    latency.submitted = t1 + 200;
    CUpti_ActivityKernel10 slow = Kernel(3, t1 + 20000, 5'000'000'000ull, 8, "five seconds");
    CUpti_ActivityMemcpy6 copy{};
    copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    copy.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    copy.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    copy.bytes = 5ull << 32;  // bytes stay 64-bit in both forms
    copy.start = t1 + 30000;
    copy.end = copy.start + 700;
    copy.streamId = 9;
    copy.correlationId = 4;
    CUpti_ActivityMemcpy6 long_copy = copy;
    long_copy.start = t1 + 40000;
    long_copy.end = long_copy.start + 4'300'000'000ull;  // more than 2^32 ns
    long_copy.correlationId = 5;
    Buffer(s).Add(narrow).Add(latency).Add(slow).Add(copy).Add(long_copy).Complete();
  }, &dir);
  auto kernels = Slices(t, SliceKind::kKernel);
  ASSERT_EQ(kernels.size(), 3u);
  for (size_t k : kernels) {
    auto r = static_cast<size_t>(t.device_row_of_slice[k]);
    std::string name = Name(t, k);
    EXPECT_EQ(t.device.block[r], (std::array<uint32_t, 3>{256, 1, 1})) << name;
    EXPECT_EQ(t.device.shared_mem[r], 1536u) << name;
    EXPECT_EQ(t.device.registers[r], 32u) << name;
    if (name == "narrow") {
      EXPECT_EQ(t.slices.dur[k], 5000);
      EXPECT_EQ(t.device.grid[r], (std::array<uint32_t, 3>{0x7fffffff, 2, 1}));
      EXPECT_EQ(t.device.correlation[r], 1u);
    } else if (name == "latency") {
      EXPECT_EQ(t.slices.dur[k], 5000);
      EXPECT_NE(Arg(t, k, "queued_ns"), "");
      EXPECT_NE(Arg(t, k, "submitted_ns"), "");
    } else {
      EXPECT_EQ(name, "five seconds");
      EXPECT_EQ(t.slices.dur[k], 5'000'000'000);
    }
  }
  auto copies = Slices(t, SliceKind::kMemcpy);
  ASSERT_EQ(copies.size(), 2u);
  for (size_t c : copies) {
    auto r = static_cast<size_t>(t.device_row_of_slice[c]);
    EXPECT_EQ(t.device.bytes[r], 5ull << 32);
    EXPECT_EQ(t.device.copy_kind[r], model::CopyKind::kDtoH);
    EXPECT_EQ(t.device.pinned[r], 1);
    EXPECT_EQ(t.device.stream[r], 9);
    EXPECT_EQ(t.slices.dur[c], t.device.correlation[r] == 4 ? 700 : 4'300'000'000);
  }
  // Which form carried each: babeltrace2 reads both through the metadata.
  testing::ExpectBabeltraceAgrees(dir);
  testing::RunResult bt = testing::RunCommand({"sh", "-c", "command -v babeltrace2 >/dev/null && babeltrace2 \"$0\"", dir + "/ctf"});
  if (bt.exit_code == 0) {
    auto count = [&](const std::string& what) {
      size_t n = 0;
      for (size_t p = bt.out.find(what); p != std::string::npos; p = bt.out.find(what, p + 1)) ++n;
      return n;
    };
    EXPECT_EQ(count(" kernel32: "), 1u) << bt.out;
    EXPECT_EQ(count(" kernel: "), 2u) << bt.out;
    EXPECT_EQ(count(" memcpy32: "), 1u) << bt.out;
    EXPECT_EQ(count(" memcpy: "), 1u) << bt.out;
  }
}

// Kernel names are cached by address and checked against their text once per
// buffer: an address that names another kernel in a later buffer (a module
// unloaded, its memory reused) gets the new name.
TEST_F(Cupti, AKernelNameAddressReusedInALaterBufferGetsItsNewName) {
  model::Trace t = RunScenario("cupti_name_reuse", [](cupti::Session& s) {
    static char name[32] = "first_kernel";
    uint64_t t1 = Now();
    Buffer(s).Add(Kernel(1, t1 + 1000, 100, 7, name)).Add(Kernel(2, t1 + 2000, 100, 7, name)).Complete();
    std::strcpy(name, "second_kernel");
    Buffer(s).Add(Kernel(3, t1 + 3000, 100, 7, name)).Complete();
  });
  std::map<std::string, int> names;
  for (size_t k : Slices(t, SliceKind::kKernel)) ++names[Name(t, k)];
  EXPECT_EQ(names, (std::map<std::string, int>{{"first_kernel", 2}, {"second_kernel", 1}}));
}

// --- copies, fills, syncs, memory --------------------------------------------------

TEST_F(Cupti, MemcpyOfEveryKindWithBytesDirectionAndHostMemory) {
  struct Case {
    CUpti_ActivityMemcpyKind kind;
    CUpti_ActivityMemoryKind src, dst;
    model::CopyKind want;
    int8_t pinned;
  };
  static const Case cases[] = {
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, model::CopyKind::kHtoD, 1},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, model::CopyKind::kHtoD, 0},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, model::CopyKind::kDtoH, 1},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, model::CopyKind::kDtoH, 0},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, model::CopyKind::kHtoD, 0},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOH, CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, model::CopyKind::kDtoH, 1},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOA, CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, model::CopyKind::kDtoD, -1},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOD, CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, model::CopyKind::kDtoD, -1},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOA, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, model::CopyKind::kDtoD, -1},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, model::CopyKind::kDtoD, -1},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, model::CopyKind::kHtoH, 1},
      {CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, model::CopyKind::kUnknown, -1},
  };
  model::Trace t = RunScenario("cupti_memcpy", [](cupti::Session& s) {
    cudaMemcpy_v3020_params p{};
    p.count = 4096;
    p.kind = cudaMemcpyHostToDevice;
    Call(s, {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, &p, nullptr, 100});
    cuMemcpyDtoH_v2_params d{};
    d.ByteCount = 777;
    Call(s, {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, &d, nullptr, 101});
    uint64_t t0 = Now();
    Buffer b(s);
    uint32_t i = 0;
    for (const Case& c : cases) {
      CUpti_ActivityMemcpy6 m{};
      m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
      m.copyKind = static_cast<uint8_t>(c.kind);
      m.srcKind = static_cast<uint8_t>(c.src);
      m.dstKind = static_cast<uint8_t>(c.dst);
      m.flags = i % 2 ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
      m.bytes = 1000 + i;
      m.start = t0 + 1000 * (i + 1);
      m.end = m.start + 500;
      m.deviceId = 0;
      m.contextId = 1;
      m.streamId = 7;
      m.correlationId = i == 0 ? 100 : i == 3 ? 101 : 200 + i;
      b.Add(m);
      ++i;
    }
    CUpti_ActivityMemcpyPtoP4 p2p{};
    p2p.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    p2p.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    p2p.srcKind = p2p.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    p2p.bytes = 1 << 20;
    p2p.start = t0 + 50000;
    p2p.end = p2p.start + 10000;
    p2p.deviceId = 0;
    p2p.srcDeviceId = 0;
    p2p.dstDeviceId = 1;
    p2p.streamId = 9;
    p2p.correlationId = 300;
    b.Add(p2p);
    b.Complete();
  });
  auto copies = Slices(t, SliceKind::kMemcpy);
  ASSERT_EQ(copies.size(), std::size(cases) + 1);
  for (size_t s : copies) {
    auto r = static_cast<size_t>(t.device_row_of_slice[s]);
    uint64_t bytes = t.device.bytes[r];
    if (bytes == (1u << 20)) {
      EXPECT_EQ(t.device.copy_kind[r], model::CopyKind::kPtoP);
      EXPECT_EQ(Name(t, s), "Memcpy PtoP");
      EXPECT_EQ(t.device.stream[r], 9);
      continue;
    }
    size_t i = bytes - 1000;
    ASSERT_LT(i, std::size(cases));
    EXPECT_EQ(t.device.copy_kind[r], cases[i].want) << i;
    EXPECT_EQ(t.device.pinned[r], cases[i].pinned) << i;
    EXPECT_EQ(t.slices.dur[s], 500);
  }
  // The runtime call and the direct driver call carry bytes and direction, and link.
  auto runtime = Slices(t, SliceKind::kRuntime);
  ASSERT_EQ(runtime.size(), 1u);
  EXPECT_EQ(Name(t, runtime[0]), "cudaMemcpy");
  EXPECT_EQ(Arg(t, runtime[0], "bytes"), "4096");
  EXPECT_EQ(Arg(t, runtime[0], "copy_kind"), std::to_string(static_cast<int>(model::CopyKind::kHtoD)));
  auto driver = Slices(t, SliceKind::kDriver);
  ASSERT_EQ(driver.size(), 1u);
  EXPECT_EQ(Name(t, driver[0]), "cuMemcpyDtoH");
  EXPECT_EQ(Arg(t, driver[0], "bytes"), "777");
  EXPECT_EQ(Arg(t, driver[0], "copy_kind"), std::to_string(static_cast<int>(model::CopyKind::kDtoH)));
  int linked = 0;
  for (size_t r = 0; r < t.device.size(); ++r) linked += t.device.launch[r] != model::kNone;
  EXPECT_EQ(linked, 2);
}

TEST_F(Cupti, MemsetSynchronizationAndMemoryRecords) {
  model::Trace t = RunScenario("cupti_misc", [](cupti::Session& s) {
    cudaMemset_v3020_params ms{};
    ms.count = 65536;
    Call(s, {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, &ms, nullptr, 40});
    cudaMalloc_v3020_params ma{};
    ma.size = 1 << 20;
    Call(s, {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &ma, nullptr, 41});
    uint64_t t0 = Now();
    Buffer b(s);
    CUpti_ActivityMemset4 m{};
    m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    m.value = 0;
    m.bytes = 65536;
    m.start = t0 + 1000;
    m.end = t0 + 2000;
    m.deviceId = 0;
    m.streamId = 7;
    m.correlationId = 40;
    m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    b.Add(m);
    const CUpti_ActivitySynchronizationType types[] = {
        CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT,
        CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE};
    uint64_t at = t0 + 3000;
    for (auto type : types) {
      CUpti_ActivitySynchronization2 y{};
      y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
      y.type = type;
      y.start = at;
      y.end = at + 400;
      y.contextId = 1;
      y.streamId = type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE ? CUPTI_SYNCHRONIZATION_INVALID_VALUE : 7;
      y.correlationId = 50 + static_cast<uint32_t>(type);
      b.Add(y);
      at += 1000;
    }
    for (int op = 0; op < 2; ++op) {
      CUpti_ActivityMemory4 a{};
      a.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
      a.memoryOperationType = op == 0 ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
      a.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
      a.correlationId = 41;
      a.address = 0x7f0000000000;
      a.bytes = 1 << 20;
      a.timestamp = t0 + 10000 + 1000 * op;
      a.deviceId = 0;
      b.Add(a);
    }
    b.Complete();
  });
  auto sets = Slices(t, SliceKind::kMemset);
  ASSERT_EQ(sets.size(), 1u);
  auto r = static_cast<size_t>(t.device_row_of_slice[sets[0]]);
  EXPECT_EQ(t.device.bytes[r], 65536u);
  ASSERT_NE(t.device.launch[r], model::kNone);
  EXPECT_EQ(Name(t, static_cast<size_t>(t.device.launch[r])), "cudaMemset");
  std::set<std::string> syncs;
  for (size_t s : Slices(t, SliceKind::kDeviceSync)) {
    syncs.insert(Name(t, s));
    auto row = static_cast<size_t>(t.device_row_of_slice[s]);
    if (Name(t, s) == "Context Synchronize") {
      EXPECT_EQ(std::string(t.strings.Get(t.tracks[t.slices.track[s]].name)), "CUDA context 1 synchronization");
    } else {
      EXPECT_EQ(t.device.stream[row], 7);
    }
  }
  EXPECT_EQ(syncs, (std::set<std::string>{"Event Synchronize", "Stream Wait Event", "Stream Synchronize",
                                          "Context Synchronize"}));
  ASSERT_EQ(t.memory.size(), 2u);
  EXPECT_EQ(t.memory.bytes[0] + t.memory.bytes[1], 0);
  EXPECT_EQ(std::max(t.memory.bytes[0], t.memory.bytes[1]), 1 << 20);
  EXPECT_EQ(t.memory.device[0], 0);
  auto rt = Slices(t, SliceKind::kRuntime);
  bool malloc_size = false;
  for (size_t s : rt) malloc_size = malloc_size || (Name(t, s) == "cudaMalloc" && Arg(t, s, "size") == "1048576");
  EXPECT_TRUE(malloc_size);
}

// --- API calls from activity records (callback API held by another tool) -----------

TEST_F(Cupti, RuntimeAndDriverApiRecordsWhenCallbacksAreTaken) {
  Fake::subscribe = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  uint32_t my_tid = static_cast<uint32_t>(::syscall(SYS_gettid));
  model::Trace t = RunScenario("cupti_api_records", [](cupti::Session& s) {
    uint32_t tid = static_cast<uint32_t>(::syscall(SYS_gettid));
    s.threads().Learn(cupti::ThreadMap::CuptiThreadId(), tid);
    uint64_t t0 = Now();
    Buffer b(s);
    CUpti_ActivityAPI a{};
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    a.start = t0 + 100;
    a.end = t0 + 900;
    a.processId = static_cast<uint32_t>(::getpid());
    a.threadId = cupti::ThreadMap::CuptiThreadId();
    a.correlationId = 61;
    b.Add(a);
    CUpti_ActivityAPI d = a;
    d.kind = CUPTI_ACTIVITY_KIND_DRIVER;
    d.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
    d.start = t0 + 1000;
    d.end = t0 + 1500;
    d.correlationId = 62;
    d.returnValue = 1;  // CUDA_ERROR_INVALID_VALUE
    b.Add(d);
    b.Add(Kernel(61, t0 + 2000, 1000, 7, "k1")).Add(Kernel(62, t0 + 3500, 1000, 7, "k2"));
    b.Complete();
    // Only in this mode: the activity kinds for API calls and NVTX markers.
    bool runtime = false, marker = false;
    for (auto k : Fake::enabled) {
      runtime = runtime || k == CUPTI_ACTIVITY_KIND_RUNTIME;
      marker = marker || k == CUPTI_ACTIVITY_KIND_MARKER;
    }
    if (!runtime || !marker) ::_exit(4);
  });
  (void)my_tid;
  auto rt = Slices(t, SliceKind::kRuntime);
  auto dr = Slices(t, SliceKind::kDriver);
  ASSERT_EQ(rt.size(), 1u);
  ASSERT_EQ(dr.size(), 1u);
  EXPECT_EQ(Name(t, rt[0]), "cudaLaunchKernel");
  EXPECT_EQ(t.slices.dur[rt[0]], 800);
  EXPECT_EQ(Name(t, dr[0]), "cuLaunchKernel");
  EXPECT_EQ(Arg(t, dr[0], "result"), "1");
  EXPECT_EQ(t.tracks[t.slices.track[rt[0]]].kind, model::TrackKind::kThread);
  for (size_t k : Slices(t, SliceKind::kKernel)) {
    auto r = static_cast<size_t>(t.device_row_of_slice[k]);
    ASSERT_NE(t.device.launch[r], model::kNone);
    EXPECT_EQ(Name(t, static_cast<size_t>(t.device.launch[r])), Name(t, k) == "k1" ? "cudaLaunchKernel" : "cuLaunchKernel");
  }
  const auto* st = Collector(t, "cuda");
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->state, "partial");
  EXPECT_NE(st->detail.find("kineto"), std::string::npos) << st->detail;
}

// --- NVTX ------------------------------------------------------------------------------

TEST_F(Cupti, NvtxPushPopStartEndRangesAndMarksFromCallbacks) {
  model::Trace t = RunScenario("cupti_nvtx", [](cupti::Session& s) {
    auto nvtx = [&s](CUpti_CallbackId cbid, const void* params, const void* ret = nullptr) {
      CUpti_NvtxData d{"nvtx", params, ret};
      s.OnCallback(CUPTI_CB_DOMAIN_NVTX, cbid, &d);
    };
    nvtxRangePushA_params step{"train_step"};
    nvtx(CUPTI_CBID_NVTX_nvtxRangePushA, &step);
    nvtxEventAttributes_t attr{};
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attr.message.ascii = "forward";
    nvtxRangePushEx_params fwd{&attr};
    nvtx(CUPTI_CBID_NVTX_nvtxRangePushEx, &fwd);
    // A registered string in a domain.
    nvtxDomainHandle_t domain = reinterpret_cast<nvtxDomainHandle_t>(0x1234);
    nvtxDomainCreateA_params dc{"my.library"};
    nvtx(CUPTI_CBID_NVTX_nvtxDomainCreateA, &dc, &domain);
    nvtxStringHandle_t h = reinterpret_cast<nvtxStringHandle_t>(0x5678);
    nvtxDomainRegisterStringA_params rs{domain, "aten::mm"};
    nvtx(CUPTI_CBID_NVTX_nvtxDomainRegisterStringA, &rs, &h);
    nvtxEventAttributes_t reg = attr;
    reg.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    reg.message.registered = h;
    nvtxDomainRangePushEx_params mm{domain, {&reg}};
    nvtx(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, &mm);
    nvtxMarkA_params mark{"checkpoint"};
    nvtx(CUPTI_CBID_NVTX_nvtxMarkA, &mark);
    nvtxDomainRangePop_params pop_mm{domain};
    nvtx(CUPTI_CBID_NVTX_nvtxDomainRangePop, &pop_mm);
    nvtx(CUPTI_CBID_NVTX_nvtxRangePop, nullptr);  // params may be null: ignored
    nvtxRangePop_params none{};
    nvtx(CUPTI_CBID_NVTX_nvtxRangePop, &none);
    // A start/end range that ends on another thread.
    nvtxRangeId_t id = 42;
    nvtxRangeStartA_params load{"data_loading"};
    nvtx(CUPTI_CBID_NVTX_nvtxRangeStartA, &load, &id);
    std::thread([&] {
      nvtxRangeEnd_params end{id};
      CUpti_NvtxData d{"nvtx", &end, nullptr};
      s.OnCallback(CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangeEnd, &d);
    }).join();
    nvtx(CUPTI_CBID_NVTX_nvtxRangePop, &none);
  });
  std::map<std::string, size_t> spans;
  for (size_t s : Slices(t, SliceKind::kSpan)) spans[Name(t, s)] = s;
  ASSERT_TRUE(spans.count("train_step"));
  ASSERT_TRUE(spans.count("forward"));
  ASSERT_TRUE(spans.count("aten::mm"));
  ASSERT_TRUE(spans.count("data_loading"));
  EXPECT_EQ(t.slices.parent[spans["forward"]], static_cast<int32_t>(spans["train_step"]));
  EXPECT_EQ(t.slices.parent[spans["aten::mm"]], static_cast<int32_t>(spans["forward"]));
  // The start/end range sits on the thread that started it, ends when the other thread ended it.
  EXPECT_EQ(t.slices.track[spans["data_loading"]], t.slices.track[spans["train_step"]]);
  EXPECT_GT(t.slices.dur[spans["data_loading"]], 0);
  ASSERT_EQ(t.instants.size(), 1u);
  EXPECT_EQ(std::string(t.strings.Get(t.instants.name[0])), "checkpoint");
  EXPECT_GE(t.instants.ts[0], t.slices.ts[spans["aten::mm"]]);
  EXPECT_LE(t.instants.ts[0], t.slices.end(spans["aten::mm"]));
}

TEST_F(Cupti, NvtxMarkerRecordsWhenCallbacksAreTaken) {
  Fake::subscribe = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  model::Trace t = RunScenario("cupti_markers", [](cupti::Session& s) {
    s.threads().Learn(cupti::ThreadMap::CuptiThreadId(), static_cast<uint32_t>(::syscall(SYS_gettid)));
    uint64_t t0 = Now();
    Buffer b(s);
    auto marker = [&](uint32_t flags, uint32_t id, uint64_t ts, const char* name, const char* domain) {
      CUpti_ActivityMarker2 m{};
      m.kind = CUPTI_ACTIVITY_KIND_MARKER;
      m.flags = static_cast<CUpti_ActivityFlag>(flags);
      m.timestamp = ts;
      m.id = id;
      m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
      m.objectId.pt.processId = static_cast<uint32_t>(::getpid());
      m.objectId.pt.threadId = cupti::ThreadMap::CuptiThreadId();
      m.name = name;
      m.domain = domain;
      b.Add(m);
    };
    marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, t0 + 1000, "outer", "");          // push
    marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 2, t0 + 2000, "inner", "my.domain"); // start/end
    marker(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 3, t0 + 2500, "mark", "");
    marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 2, t0 + 3000, nullptr, nullptr);
    marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, t0 + 4000, nullptr, nullptr);
    b.Complete();
  });
  std::map<std::string, size_t> spans;
  for (size_t s : Slices(t, SliceKind::kSpan)) spans[Name(t, s)] = s;
  ASSERT_TRUE(spans.count("outer") && spans.count("inner"));
  EXPECT_EQ(t.slices.dur[spans["outer"]], 3000);
  EXPECT_EQ(t.slices.dur[spans["inner"]], 1000);
  EXPECT_EQ(t.slices.parent[spans["inner"]], static_cast<int32_t>(spans["outer"]));
  EXPECT_EQ(Arg(t, spans["inner"], "domain"), "my.domain");
  ASSERT_EQ(t.instants.size(), 1u);
  EXPECT_EQ(std::string(t.strings.Get(t.instants.name[0])), "mark");
}

// --- losses, overhead, devices, clocks ----------------------------------------------

TEST_F(Cupti, DroppedAndUntimedRecordsAreReported) {
  model::Trace t = RunScenario("cupti_dropped", [](cupti::Session& s) {
    uint64_t t0 = Now();
    Fake::dropped_next = 1234;  // CUPTI had no buffer for these
    Buffer(s).Add(Kernel(1, t0 + 100, 100, 7, "k")).Add(Kernel(2, 0, 0, 7, "untimed")).Complete();
    Fake::dropped_next = 66;
    Buffer(s).Add(Kernel(3, t0 + 300, 100, 7, "k")).Complete();
    // A buffer CUPTI could not get: the session refuses when out of buffers.
    uint8_t* buf[64];
    size_t size = 0, max = 0;
    int got = 0;
    for (auto& x : buf) {
      s.ProvideBuffer(&x, &size, &max);
      got += x != nullptr;
    }
    if (s.refused_buffers() == 0 || got == 64) ::_exit(5);
    for (auto& x : buf)
      if (x) s.BufferDone(x, 0);
  });
  EXPECT_EQ(Slices(t, SliceKind::kKernel).size(), 2u);
  EXPECT_GE(t.events_lost, 1234u + 66u);
  bool warned = false;
  for (const auto& w : t.warnings) warned = warned || w.find("1300 CUPTI activity records lost") != std::string::npos;
  EXPECT_TRUE(warned) << (t.warnings.empty() ? "" : t.warnings.front());
  const auto* st = Collector(t, "cuda");
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->state, "partial");
  EXPECT_NE(st->detail.find("1300 activity records dropped"), std::string::npos) << st->detail;
  EXPECT_NE(st->detail.find("1 kernels without timestamps"), std::string::npos) << st->detail;
}

TEST_F(Cupti, OverheadDeviceAndContextRecords) {
  model::Trace t = RunScenario("cupti_overhead", [](cupti::Session& s) {
    s.threads().Learn(cupti::ThreadMap::CuptiThreadId(), static_cast<uint32_t>(::syscall(SYS_gettid)));
    uint64_t t0 = Now();
    Buffer b(s);
    CUpti_ActivityOverhead3 o{};
    o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
    o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    o.objectId.pt.threadId = cupti::ThreadMap::CuptiThreadId();
    o.start = t0 + 100;
    o.end = t0 + 5100;
    b.Add(o);
    CUpti_ActivityDevice5 d{};
    d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
    d.id = 0;
    d.name = "NVIDIA H100 80GB HBM3";
    d.numMultiprocessors = 132;
    d.coreClockRate = 1980000;  // kHz
    d.globalMemorySize = 85520809984ull;
    d.globalMemoryBandwidth = 3352320000ull;  // KB/s
    d.computeCapabilityMajor = 9;
    d.computeCapabilityMinor = 0;
    b.Add(d);
    b.Complete();
  });
  auto other = Slices(t, SliceKind::kOther);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(Name(t, other[0]), "CUPTI overhead: activity buffer flush");
  EXPECT_EQ(t.slices.dur[other[0]], 5000);
  EXPECT_EQ(t.tracks[t.slices.track[other[0]]].kind, model::TrackKind::kThread);
  ASSERT_EQ(t.devices.size(), 1u);
  const model::Device& d = t.devices[0];
  EXPECT_EQ(d.api, "cuda");
  EXPECT_EQ(d.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d.compute_units, 132u);
  EXPECT_EQ(d.clock_khz, 1980000u);
  EXPECT_EQ(d.memory_bytes, 85520809984ull);
  EXPECT_DOUBLE_EQ(d.memory_bandwidth, 3352320000.0 * 1000);
  // 132 SMs x 128 FP32 lanes x 2 FLOP x 1.98 GHz; FP64 half of that on sm_90.
  EXPECT_DOUBLE_EQ(d.peak_flops_f32, 132.0 * 128 * 2 * 1.98e9);
  EXPECT_DOUBLE_EQ(d.peak_flops_f64, d.peak_flops_f32 / 2);
  EXPECT_NE(d.properties.find("compute capability 9.0"), std::string::npos);
}

TEST_F(Cupti, RefusedTimestampCallbackMapsRealtimeToTheTraceClock) {
  Fake::timestamps = CUPTI_ERROR_UNKNOWN;
  int64_t realtime_minus_mono = 0;
  model::Trace t = RunScenario("cupti_realtime", [&](cupti::Session& s) {
    timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    uint64_t real = static_cast<uint64_t>(rt.tv_sec) * 1000000000ull + static_cast<uint64_t>(rt.tv_nsec);
    cudaLaunchKernel_v7000_params p{};
    Call(s, {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &p, "k", 5});
    // CUPTI's default clock: a kernel that ran 50 ms after "now" on CLOCK_REALTIME
    // (a margin no loaded machine eats between the clock read and the call).
    Buffer(s).Add(Kernel(5, real + 50'000'000, 1000, 7, "k")).Complete();
  });
  (void)realtime_minus_mono;
  auto k = Slices(t, SliceKind::kKernel);
  auto api = Slices(t, SliceKind::kRuntime);
  ASSERT_EQ(k.size(), 1u);
  ASSERT_EQ(api.size(), 1u);
  // On the trace clock the kernel starts about 50 ms after its launch, not 50 years.
  int64_t gap = t.slices.ts[k[0]] - t.slices.ts[api[0]];
  EXPECT_GT(gap, 25'000'000);
  EXPECT_LT(gap, 1'000'000'000);
  EXPECT_NE(Collector(t, "cuda")->detail.find("CLOCK_REALTIME"), std::string::npos);
}

TEST_F(Cupti, OtherMajorCuptiVersionIsRefused) {
  Fake::version = CUPTI_API_VERSION + 10000;
  model::Trace t = RunScenario("cupti_version", [](cupti::Session& s) {
    Buffer(s).Add(Kernel(1, Now(), 100, 7, "k")).Complete();
  });
  EXPECT_TRUE(Slices(t, SliceKind::kKernel).empty());
  const auto* st = Collector(t, "cuda");
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->state, "unavailable");
  EXPECT_NE(st->detail.find("major version"), std::string::npos) << st->detail;
}

// --- --gpu-metrics -------------------------------------------------------------------

TEST(CuptiRangeProfiler, WindowSpecs) {
  cupti::MetricWindow w;
  std::string err;
  ASSERT_TRUE(cupti::ParseMetricWindow("kernels=10", &w, &err));
  EXPECT_EQ(w.kind, cupti::MetricWindow::Kind::kKernels);
  EXPECT_EQ(w.first, 0u);
  EXPECT_EQ(w.last, 10u);
  ASSERT_TRUE(cupti::ParseMetricWindow("kernels=5,skip=100", &w, &err));
  EXPECT_EQ(w.first, 100u);
  EXPECT_EQ(w.last, 105u);
  ASSERT_TRUE(cupti::ParseMetricWindow("steps=3-4", &w, &err));
  EXPECT_EQ(w.kind, cupti::MetricWindow::Kind::kSteps);
  for (const char* bad : {"kernels=0", "kernels=x", "kernels=3,skip=", "steps=5-2", "steps=7", "all", ""})
    EXPECT_FALSE(cupti::ParseMetricWindow(bad, &w, &err)) << bad;
}

TEST_F(Cupti, KernelMetricsJoinTheirKernels) {
  model::Trace t = RunScenario("cupti_metrics", [](cupti::Session& s) {
    cudaLaunchKernel_v7000_params p{};
    Call(s, {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &p, "gemm", 77});
    Buffer(s).Add(Kernel(77, Now() + 1000, 100000, 7, "gemm")).Complete();
    accel::KernelMetrics m;
    m.correlation = 77;
    m.flops_f32 = 2.0 * 1024 * 1024 * 1024;
    m.dram_bytes = 3 * 4.0 * 1024 * 1024;
    m.achieved_occupancy = 0.625;
    m.raw = "gpu__time_duration.sum=100000;";
    accel::EmitKernelMetrics(m);
  });
  auto k = Slices(t, SliceKind::kKernel);
  ASSERT_EQ(k.size(), 1u);
  auto r = static_cast<size_t>(t.device_row_of_slice[k[0]]);
  EXPECT_FLOAT_EQ(t.device.occupancy[r], 0.625f);
  EXPECT_EQ(Arg(t, k[0], "flops_f32"), std::to_string(2ll * 1024 * 1024 * 1024));
  EXPECT_EQ(Arg(t, k[0], "dram_bytes"), std::to_string(12ll * 1024 * 1024));
}

}  // namespace
}  // namespace strata
