// The PyTorch observer's memory level (design: observer.cc): what c10's
// allocators report (the CUDA caching allocator, CPU blocks that bypass the
// wrapper) and strata's wrapper around the process's CPU allocator.
#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/profiler/orchestration/observer.h>
#include <torch/version.h>

#include <atomic>
#include <cstring>
#include <memory>

#include "collectors/torch/observer.h"
#include "format/schema.h"
#include "recorder/hot.h"
#include "recorder/runtime.h"

namespace strata::collectors::torch {

std::atomic<bool> g_memory_on{false};

namespace {

namespace fmt_ = strata::format;

// Set while the calling thread is inside strata's CPU allocator wrapper (below).
__thread bool t_in_cpu_wrapper __attribute__((tls_model("initial-exec"))) = false;

// A mem_alloc / mem_free event: {ptr, bytes, total allocated, total reserved:
// u64; device type, index: u8}.
void EmitMem(uint16_t event, const void* ptr, uint64_t bytes, uint64_t total_allocated, uint64_t total_reserved,
             uint8_t device_type, uint8_t device_index) {
  uint64_t words[4] = {reinterpret_cast<uintptr_t>(ptr), bytes, total_allocated, total_reserved};
  uint8_t dev[2] = {device_type, device_index};
  recorder::EmitFixed<34>(g_clock, event, [&words, &dev](uint8_t* p) {
    std::memcpy(p, words, sizeof words);
    std::memcpy(p + sizeof words, dev, sizeof dev);
  });
}

// c10's allocators report to the PROFILER_STATE debug info of the allocating
// thread. Deriving from ProfilerStateBase (not just MemoryReportingInfoBase)
// keeps torch.profiler working: it casts that slot to ProfilerStateBase and
// refuses to start only if the config there is not "disabled".
class MemoryReporter final : public ::torch::profiler::impl::ProfilerStateBase {
 public:
  MemoryReporter()
      : ProfilerStateBase(::torch::profiler::impl::ProfilerConfig(::torch::profiler::impl::ProfilerState::Disabled)) {}

#if TORCH_VERSION_MAJOR >= 2
  // PyTorch 2.0 changed the totals to size_t.
  void reportMemoryUsage(void* ptr, int64_t alloc_size, size_t total_allocated, size_t total_reserved,
                         c10::Device device) override {
    Report(ptr, alloc_size, static_cast<int64_t>(total_allocated), static_cast<int64_t>(total_reserved), device);
  }
  void reportOutOfMemory(int64_t alloc_size, size_t total_allocated, size_t total_reserved, c10::Device device) override {
    Oom(alloc_size, static_cast<int64_t>(total_allocated), static_cast<int64_t>(total_reserved), device);
  }
#else
  void reportMemoryUsage(void* ptr, int64_t alloc_size, int64_t total_allocated, int64_t total_reserved,
                         c10::Device device) override {
    Report(ptr, alloc_size, total_allocated, total_reserved, device);
  }
  void reportOutOfMemory(int64_t alloc_size, int64_t total_allocated, int64_t total_reserved, c10::Device device) override {
    Oom(alloc_size, total_allocated, total_reserved, device);
  }
#endif

  // Inside the CPU allocator wrapper c10 need not report: the wrapper records.
  bool memoryProfilingEnabled() const override {
    return g_memory_on.load(std::memory_order_relaxed) && !t_in_cpu_wrapper;
  }
  ::torch::profiler::impl::ActiveProfilerType profilerType() override {
    return ::torch::profiler::impl::ActiveProfilerType::NONE;
  }

 private:
  static uint8_t Index(c10::Device d) { return d.has_index() ? static_cast<uint8_t>(d.index()) : 255; }

  static void Report(void* ptr, int64_t alloc_size, int64_t total_allocated, int64_t total_reserved, c10::Device d) {
    if (alloc_size == 0) return;
    EmitMem(alloc_size > 0 ? fmt_::kMemAlloc : fmt_::kMemFree, ptr,
            static_cast<uint64_t>(alloc_size > 0 ? alloc_size : -alloc_size), static_cast<uint64_t>(total_allocated),
            static_cast<uint64_t>(total_reserved), static_cast<uint8_t>(d.type()), Index(d));
  }
  static void Oom(int64_t alloc_size, int64_t total_allocated, int64_t total_reserved, c10::Device d) {
    Payload p;
    p.Put<uint64_t>(static_cast<uint64_t>(alloc_size))
        .Put<uint64_t>(static_cast<uint64_t>(total_allocated))
        .Put<uint64_t>(static_cast<uint64_t>(total_reserved))
        .Put<uint8_t>(static_cast<uint8_t>(d.type()))
        .Put<uint8_t>(Index(d));
    recorder::EmitBytes(g_clock, fmt_::kMemOom, p.data(), p.size());
  }
};

// CPU allocations. c10's CPU allocator reports to the thread's reporter above
// through a process-wide mutex and a hash map of every live block's size (what
// torch.profiler's profile_memory pays too: ~60 ns per op of a tiny training
// step, BENCHMARKS.md). strata wraps the process's CPU allocator instead: a
// block allocated while memory is recorded gets a deleter of strata's, which
// records the free and hands the block to the allocator's own deleter. The
// free's size is the allocation's at that address, found when the trace is
// loaded (mem_free with bytes 0). Blocks that do not come through the wrapper
// (from GetDefaultCPUAllocator() called directly, as torch.UntypedStorage(n)
// does) are still reported by c10: the reporter says "profiling on" except
// inside the wrapper.
c10::DeleterFnPtr g_cpu_base_deleter = nullptr;  // the wrapped allocator's (raw_deleter)
std::atomic<bool> g_cpu_unfollowed{false};  // a block came back with a deleter strata cannot take over

struct InCpuWrapper {
  InCpuWrapper() { t_in_cpu_wrapper = true; }
  ~InCpuWrapper() { t_in_cpu_wrapper = false; }
};

// bytes 0 on a free; total allocated ~0: unknown; the CPU, no index.
void EmitCpu(uint16_t event, const void* ptr, uint64_t bytes) {
  EmitMem(event, ptr, bytes, UINT64_MAX, 0, static_cast<uint8_t>(c10::DeviceType::CPU), 255);
}

void FreeCpu(void* ptr) {
  if (ptr) EmitCpu(fmt_::kMemFree, ptr, 0);
  InCpuWrapper in;
  g_cpu_base_deleter(ptr);
}

class CpuAllocator final : public c10::Allocator {
 public:
  explicit CpuAllocator(c10::Allocator* base) : base_(base) {}

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  // PyTorch 2.3 made allocate() non-const and added copy_data().
  c10::DataPtr allocate(size_t n) override { return Allocate(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const override { base_->copy_data(dest, src, count); }
#else
  c10::DataPtr allocate(size_t n) const override { return Allocate(n); }
#endif
  // raw_allocate() keeps only the pointer and frees it with this: a block
  // allocated while memory was off then gives a free of an address with no
  // allocation, which the importer drops.
  c10::DeleterFnPtr raw_deleter() const override { return &FreeCpu; }

 private:
  c10::DataPtr Allocate(size_t n) const {
    if (!g_memory_on.load(std::memory_order_relaxed)) return base_->allocate(n);
    c10::DataPtr dp;
    {
      InCpuWrapper in;
      dp = base_->allocate(n);
    }
    if (!dp.get()) return dp;
    if (dp.get() == dp.get_context() && dp.compare_exchange_deleter(g_cpu_base_deleter, &FreeCpu))
      EmitCpu(fmt_::kMemAlloc, dp.get(), n);
    else if (!g_cpu_unfollowed.exchange(true, std::memory_order_relaxed))
      recorder::ReportCollectorStatus("pytorch", "warning",
                                      "the CPU allocator returned a block strata cannot follow: CPU memory figures "
                                      "miss such blocks");
    return dp;
  }

  c10::Allocator* base_;
};

}  // namespace

std::shared_ptr<c10::DebugInfoBase> MakeMemoryReporter() { return std::make_shared<MemoryReporter>(); }

// Puts the wrapper in place of the process's CPU allocator, at the priority
// c10 registers its own with (0), so a program that sets its allocator later
// still can; c10's reporting then covers what that allocator reports. False
// (c10's reporting stays in use) when the allocator's blocks cannot be
// followed (no raw deleter, or blocks that do not use it) or one with a higher
// priority is in place.
bool WrapCpuAllocator() {
  c10::Allocator* base = c10::GetCPUAllocator();
  if (!base || !base->raw_deleter()) return false;
  {
    c10::DataPtr probe = base->allocate(64);
    if (!probe.get() || probe.get() != probe.get_context() || probe.get_deleter() != base->raw_deleter()) return false;
  }
  g_cpu_base_deleter = base->raw_deleter();
  auto* wrapper = new CpuAllocator(base);  // leaked: blocks it made outlive everything
  c10::SetCPUAllocator(wrapper, 0);
  return c10::GetCPUAllocator() == wrapper;
}

}  // namespace strata::collectors::torch
