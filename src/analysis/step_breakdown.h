// Where each step's time went: the thread that ran the step, split instant by
// instant into exhaustive parts that sum to the step's duration (input, op
// compute, dispatch overhead, allocation, synchronization, copies, I/O, Python
// outside ops, idle), and for programs with device activity, the device's busy
// time with each idle interval put on what that thread was doing meanwhile.
//
// A step is a kStep slice (analysis/framework.h: Training); consecutive found
// steps tile the loop, so the breakdowns of all steps cover the loop entirely.
// Pure functions over the model.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/framework.h"
#include "analysis/name_classes.h"
#include "model/trace.h"

namespace strata::analysis {

enum class StepPart : uint8_t {
  kInput,       // producing the batch: DataLoader waits, Python/numpy work before a forward, its file reads
  kCompute,     // inside framework ops doing their work
  kDispatch,    // framework overhead: tiny ops (all dispatch), gaps between ops, module glue, kernel launches
  kAllocation,  // allocating and filling new tensors (aten::empty, zeros...), device allocations
  kSync,        // waiting for the device (.item(), synchronize calls)
  kCopy,        // copies between devices or dtypes (.to(), copy_, memcpy calls)
  kIo,          // system calls and I/O outside ops: read/write calls, disk waits, read paths in CPU samples
  kPython,      // the program's own code outside ops, on CPU
  kIdle,        // off CPU outside I/O: sleeping, waiting on locks, preempted
};
inline constexpr size_t kStepParts = 9;
using StepParts = std::array<int64_t, kStepParts>;
// The word used for a part in text and JSON ("input", "compute", ...).
const char* StepPartName(StepPart p);

struct StepBreakdown {
  uint64_t number = 0;
  int64_t ts = 0, dur = 0;
  bool counted = false;  // not a warm-up or partial step
  StepParts host{};      // the step thread's time by part; sums to dur
  int64_t device_busy = -1;  // ns of the step with device work running (-1: no device activity in the process)
  StepParts device_idle{};   // device idle ns by what the step thread was doing; sums to dur - device_busy
  // Of device_idle: the idle stretches that began while the step's thread
  // waited in a synchronization other than the step's last one (the device ran
  // dry under a wait the step does not need: host_sync's, whatever the thread
  // did after it).
  StepParts device_idle_after_sync{};
};

struct StepBreakdowns {
  std::vector<StepBreakdown> steps;  // as TrainingSteps::steps
  size_t counted = 0;
  int64_t counted_ns = 0;
  StepParts host{};          // summed over the counted steps
  int64_t device_busy = -1;  // summed over the counted steps (-1: no device activity)
  StepParts device_idle{};
  StepParts device_idle_after_sync{};  // of device_idle (StepBreakdown's)
  // Of host[kInput]: the time graphs the step ran waited for their input
  // pipeline working on other threads (tf.data's), summed over the counted steps.
  int64_t input_in_graphs = 0;
  // Of host[kInput]: the program's own code off CPU outside I/O (blocked on a
  // queue or a lock while another thread or process produces the batch).
  int64_t input_waiting = 0;
  // The compute part of the counted steps by op (the op whose own time it is,
  // on the step's thread), largest first: the ops that bound a compute-bound step.
  std::vector<std::pair<std::string, int64_t>> compute_ops;
  // Counted steps' time by part, per step (mean), for findings.
  double PerStep(StepPart p) const;
  double Pct(StepPart p) const;  // of the counted steps' time
};

StepBreakdowns BreakdownSteps(const model::Trace& t, const TrainingSteps& steps);

// The same for any windows of a thread's time (the diagnosis's measured steps).
struct StepWindow {
  uint64_t number = 0;
  int64_t ts = 0, dur = 0;
  uint32_t track = UINT32_MAX;  // the thread; UINT32_MAX: none (all of it is the program's code)
  bool counted = true;
  // Keep the step's host pieces for the what-if replay (BreakdownWindows'
  // timelines; an empty timeline when false). Its breakdown counts either way.
  bool detail = true;
};
// A piece of the step thread's time: its part, and the slice whose own time it
// is (kNone: the program's code, or the thread waiting for work elsewhere).
struct HostInterval {
  int64_t start, end;
  StepPart part;
  int32_t slice;
  // The step's thread waits while another thread of its process does the
  // step's work (autograd's engine running the backward on a device thread).
  bool elsewhere = false;
};
// `timelines`, when given, receives each window's pieces in time order, covering it.
StepBreakdowns BreakdownWindows(const model::Trace& t, const std::vector<StepWindow>& windows,
                                std::vector<std::vector<HostInterval>>* timelines = nullptr);

// What slice names mean to the breakdown and to the rules that cite it.
bool IsDataLoadingName(std::string_view n);
// A graph a framework runs while the calling thread waits (strata._tf's spans:
// "tf.function NAME", "keras.train_step", "tf.Session.run"; strata._jax's "jax.jit NAME"): framework compute.
bool IsGraphRunName(std::string_view n);
bool IsSyncName(std::string_view n);         // waits for a device, by name (runtime syncs, .item())
bool IsDeviceReadName(std::string_view n);   // aten::item and its _local_scalar_dense
bool IsJaxWaitName(std::string_view n);     // jax.device_read, jax.block_until_ready: a result awaited

// Per host slice: kLaunches when it launched device work (itself or nested),
// kCallsRuntime when it contains a call into the accelerator's runtime or driver.
inline constexpr uint8_t kLaunches = 1, kCallsRuntime = 2;
std::vector<uint8_t> HostCallFlags(const model::Trace& t);
// A wait for the device: a runtime synchronization, or a read of a device value
// (aten::item) that called the runtime (a CPU tensor's .item() waits for nothing).
bool IsSyncSlice(const model::Trace& t, const NameClasses& nc, size_t i, const std::vector<uint8_t>& flags);
bool IsCopyName(std::string_view n);
bool IsAllocationName(std::string_view n);
// Writing or reading a file through the framework (strata._torch's "torch.save"
// span): serializing and writing are the step's I/O, nested ops included.
bool IsFileIoName(std::string_view n);

}  // namespace strata::analysis
