// Internals of the PyTorch observer (libstrata_torch), shared by its
// translation units: observer.cc (RecordFunction callbacks, steps, tiers, the C
// entry points), detail.cc (the detail tier: arguments to shapes, dtypes, cost
// estimates and tensor ids), memory.cc (allocator events) and comms.cc
// (torch.distributed's works).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "collectors/torch/name_cache.h"
#include "opcost/cost_model.h"

namespace at {
struct RecordFunction;
struct ObserverContext;
}
namespace c10 {
class DebugInfoBase;
}

namespace strata::collectors::torch {

using opcost::ArgDesc;
using opcost::ArgKind;
using opcost::EstimateCost;
using opcost::kMaxDims;
using opcost::OpCost;

// Heterogeneous lookup: find a std::string key by string_view without copying.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct ThreadState {
  NameCache names;
  uint64_t torch_thread = 0;  // RecordFunction::currentThreadId()

  // Automatic steps on this thread (see observer.cc, "Steps").
  bool step_pending = false;   // an auto_step_begin is out and its step not ended
  bool step_activity = false;  // ...and it was placed at the step's first activity
  uint64_t step = 0;           // the pending step's number
  bool loader_fed = false;     // fetches batches from a DataLoader: an iteration begins at its fetch

  // Detail-tier scratch, reused per op.
  std::vector<ArgDesc> args;
  std::string shapes, dtypes, ids;
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> strings;

  ThreadState();
};

// The calling thread's state, announced to the recorder on first use.
ThreadState& CallbackThread();

// Collectives (comms.cc): the USER_SCOPE callback for c10d backends' works.
std::unique_ptr<at::ObserverContext> OnCommStart(const at::RecordFunction& fn);
void OnCommEnd(const at::RecordFunction& fn, at::ObserverContext* ctx);

// Interns a detail string (shapes, dtypes) through the thread's cache.
uint32_t InternDetail(ThreadState& ts, const std::string& s);

// The hot path's clock (recorder/hot.h), chosen when the observer starts.
extern uint32_t g_clock;

// Memory (memory.cc): c10's allocator reports and strata's CPU allocator
// wrapper. Both record while g_memory_on.
extern std::atomic<bool> g_memory_on;
// What c10's allocators report to, pushed as each thread's PROFILER_STATE.
std::shared_ptr<c10::DebugInfoBase> MakeMemoryReporter();
// Puts strata's wrapper in place of the process's CPU allocator; false when
// its blocks cannot be followed (c10's reporting covers them then).
bool WrapCpuAllocator();

// Detail tier (detail.cc): right after the op's begin event, and right before its end.
void EmitOpDetail(ThreadState& ts, const at::RecordFunction& fn, const NameEntry& name);
void EmitOpOutputs(ThreadState& ts, const at::RecordFunction& fn);

// Little-endian payload builder for the fixed fields of schema_torch.cc.
class Payload {
 public:
  template <typename T>
  Payload& Put(T v) {
    std::memcpy(buf_ + n_, &v, sizeof v);
    n_ += sizeof v;
    return *this;
  }
  const void* data() const { return buf_; }
  uint32_t size() const { return n_; }

 private:
  uint8_t buf_[64];
  uint32_t n_ = 0;
};

}  // namespace strata::collectors::torch
