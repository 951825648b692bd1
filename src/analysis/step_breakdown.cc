#include "analysis/step_breakdown.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <set>

#include "analysis/memo.h"
#include "analysis/name_classes.h"
#include "analysis/os.h"
#include "analysis/track_rows.h"
#include "base/int_math.h"
#include "base/intervals.h"

namespace strata::analysis {
namespace {

using model::kNone;
using model::SliceKind;

bool Contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }
bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// An op this short does little work: its time is the framework's per-call cost.
constexpr int64_t kTinyOp = 20'000;
// Host time between two framework calls shorter than this is the framework's
// (argument parsing, the interpreter's step to the next call); longer, the
// program's own code.
constexpr int64_t kDispatchGap = 50'000;

bool IsRootForward(const model::Trace& t, size_t i) {
  return t.slices.kind[i] == SliceKind::kModule;
}

// The part a slice's own time belongs to, given the part of the slice it is
// nested in. `flags`: HostCallFlags of the slice.
StepPart PartOf(const model::Trace& t, const NameClasses& nc, size_t i, int parent_part, uint8_t flags) {
  // Nested work belongs to what the program asked for: the batch's loading,
  // the wait, the copy, the allocation (with its filling).
  if (parent_part == static_cast<int>(StepPart::kInput) || parent_part == static_cast<int>(StepPart::kSync) ||
      parent_part == static_cast<int>(StepPart::kCopy) || parent_part == static_cast<int>(StepPart::kAllocation) ||
      parent_part == static_cast<int>(StepPart::kIo))
    return static_cast<StepPart>(parent_part);
  uint16_t c = nc[t.slices.name[i]];
  SliceKind k = t.slices.kind[i];
  if (c & kNameDataLoading) return StepPart::kInput;
  if (c & kNameFileIo) return StepPart::kIo;
  // A graph the framework runs (a tf.function, a Keras step, Session.run): the
  // thread waits while the framework's own threads compute it.
  if (c & kNameGraphRun) return StepPart::kCompute;
  // JAX dispatches a jitted call and returns; reading its result waits for
  // it. With no device in the trace (XLA's CPU backend) that wait is the
  // computation itself, on XLA's own threads, as a graph run's is.
  if ((c & kNameSync) && t.device.size() == 0 && IsJaxWaitName(t.strings.Get(t.slices.name[i])))
    return StepPart::kCompute;
  if ((c & kNameSync) && (!(c & kNameDeviceRead) || (flags & kCallsRuntime))) return StepPart::kSync;
  if (c & kNameCopy) return StepPart::kCopy;
  if (c & kNameAllocation) return StepPart::kAllocation;
  if (k == SliceKind::kModule || k == SliceKind::kRuntime || k == SliceKind::kDriver) return StepPart::kDispatch;
  // An op whose work runs on the device spends its host time preparing and launching it.
  if (flags & kLaunches) return StepPart::kDispatch;
  return t.slices.dur[i] < kTinyOp ? StepPart::kDispatch : StepPart::kCompute;
}

// Slices the breakdown sees through: their time is that of what they contain,
// or the program's code when they contain nothing.
bool Transparent(const model::Trace& t, const NameClasses& nc, size_t i) {
  SliceKind k = t.slices.kind[i];
  if (k == SliceKind::kSpan)
    return (nc[t.slices.name[i]] & (kNameDataLoading | kNameGraphRun | kNameSync | kNameFileIo)) == 0;
  return k == SliceKind::kStep || k == SliceKind::kPython || k == SliceKind::kAnnotation || k == SliceKind::kOther ||
         model::IsDeviceKind(k);
}

// The first row of rows [lo, hi) (sorted by ts, not overlapping) that ends after `at`.
template <typename Table>
size_t FirstEndingAfter(const Table& tb, size_t lo, size_t hi, int64_t at) {
  auto b = tb.ts.begin();
  size_t r = static_cast<size_t>(std::upper_bound(b + static_cast<std::ptrdiff_t>(lo), b + static_cast<std::ptrdiff_t>(hi), at) - b);
  if (r > lo && tb.ts[r - 1] + tb.dur[r - 1] > at) --r;
  return r;
}

using Interval = HostInterval;

class StepSweep {
 public:
  StepSweep(const model::Trace& t, const NameClasses& nc, uint32_t track, const std::vector<uint8_t>* flags,
            const std::vector<Interval>* elsewhere, const std::vector<Interval>* input_elsewhere = nullptr)
      : t_(t), nc_(nc), track_(track), flags_(flags), elsewhere_(elsewhere), input_elsewhere_(input_elsewhere) {
    states_ = TrackRows(t.thread_states, track);
    syscalls_ = TrackRows(t.syscalls, track);
    samples_ = TrackRows(t.cpu_samples, track);
  }

  // Compute time by the op whose own time it is, added to while running (null: not kept).
  void KeepComputeByOp(std::map<model::StringId, int64_t>* m) { compute_by_op_ = m; }

  // Of the last Run: time graphs waited for input produced on other threads.
  int64_t input_in_graphs() const { return input_in_graphs_; }
  // Of the last Run: input time the thread spent off CPU outside I/O, in its
  // own code (blocked on a queue or a lock: waiting for another thread's batch).
  int64_t input_waiting() const { return input_waiting_; }

  // Splits [start, end) of the thread into intervals, in time order, covering it.
  std::vector<Interval> Run(int64_t start, int64_t end) {
    out_.clear();
    input_in_graphs_ = 0;
    input_waiting_ = 0;
    const auto& s = t_.slices;
    if (track_ >= t_.track_slices.size()) {
      Uncovered(start, end, StepPart::kPython);
      return std::move(out_);
    }
    auto [first, last] = t_.track_slices[track_];
    auto b = s.ts.begin();
    size_t lo = static_cast<size_t>(std::lower_bound(b + first, b + last, start) - b);
    size_t hi = static_cast<size_t>(std::lower_bound(b + first, b + last, end) - b);
    out_.reserve(2 * (hi - lo) + 8);  // a piece before and inside each slice, about
    struct Open {
      size_t slice;
      int64_t end;
      StepPart part;
    };
    std::vector<Open> stack;
    // The step's first forward of a model: the program's own code before it
    // (reading, parsing, decoding, building the batch's tensors between the
    // ops that do) produces the batch, wherever the step began (the loop's
    // head, a loader's fetch).
    int64_t first_forward = INT64_MIN;
    for (size_t j = lo; j < hi; ++j)
      if (IsRootForward(t_, j)) {
        first_forward = s.ts[j];
        break;
      }
    int64_t cursor = start;
    int64_t last_end = INT64_MIN;  // where the last framework slice closed (a gap after it is dispatch)
    auto close_until = [&](int64_t at) {
      while (!stack.empty() && stack.back().end <= at) {
        Open o = stack.back();
        stack.pop_back();
        if (o.end > cursor) EmitOwn(cursor, o.end, o.part, o.slice);
        cursor = std::max(cursor, o.end);
        if (stack.empty()) last_end = o.end;
      }
    };
    for (size_t j = lo; j < hi; ++j) {
      if (Transparent(t_, nc_, j)) continue;
      int64_t j0 = std::max(s.ts[j], start), j1 = std::min(s.end(j), end);
      close_until(j0);
      if (cursor < j0) {
        if (!stack.empty()) {
          EmitOwn(cursor, j0, stack.back().part, stack.back().slice);
        } else {
          bool between_calls = last_end == cursor && j0 - cursor < kDispatchGap;
          StepPart base = between_calls                                 ? StepPart::kDispatch
                          : ProducesBatchNext(j) || j0 <= first_forward ? StepPart::kInput
                                                                        : StepPart::kPython;
          Uncovered(cursor, j0, base);
        }
        cursor = j0;
      }
      StepPart part = PartOf(t_, nc_, j, stack.empty() ? -1 : static_cast<int>(stack.back().part),
                             flags_ != nullptr ? (*flags_)[j] : uint8_t{0});
      // A slice that ends after its parent (imported traces may overlap) ends with it.
      if (!stack.empty()) j1 = std::min(j1, stack.back().end);
      stack.push_back({j, std::max(j0, j1), part});
    }
    close_until(end);
    if (cursor < end) Uncovered(cursor, end, StepPart::kPython);
    return std::move(out_);  // (left empty for the next Run)
  }

 private:
  // What follows a stretch of the program's own code tells what it was for:
  // the code just before a model's forward, a loader or a copy produces its batch.
  bool ProducesBatchNext(size_t j) const {
    return IsRootForward(t_, j) || (nc_[t_.slices.name[j]] & (kNameDataLoading | kNameCopy));
  }

  // A framework slice's own time. A graph the framework runs while its input
  // pipeline produces the batch on other threads (and its compute threads do
  // nothing) waits for its input that long.
  void EmitOwn(int64_t a, int64_t b, StepPart p, size_t slice) {
    if (p == StepPart::kCompute && input_elsewhere_ != nullptr && nc_.Is(t_.slices.name[slice], kNameGraphRun)) {
      auto it = std::lower_bound(input_elsewhere_->begin(), input_elsewhere_->end(), a,
                                 [](const Interval& iv, int64_t at) { return iv.end <= at; });
      int64_t cursor = a;
      for (; it != input_elsewhere_->end() && it->start < b; ++it) {
        int64_t x = std::max(a, it->start), y = std::min(b, it->end);
        if (y <= x) continue;
        if (x > cursor) EmitCompute(cursor, x, slice);
        Emit(x, y, StepPart::kInput, static_cast<int32_t>(slice));
        input_in_graphs_ += y - x;
        cursor = y;
      }
      if (cursor < b) EmitCompute(cursor, b, slice);
      return;
    }
    if (p == StepPart::kCompute) {
      EmitCompute(a, b, slice);
      return;
    }
    Emit(a, b, p, static_cast<int32_t>(slice));
  }

  void EmitCompute(int64_t a, int64_t b, size_t slice) {
    if (compute_by_op_ != nullptr && b > a) (*compute_by_op_)[t_.slices.name[slice]] += b - a;
    Emit(a, b, StepPart::kCompute, static_cast<int32_t>(slice));
  }

  // Neighbours of the same part and slice merge (the replay needs each slice's pieces apart).
  void Emit(int64_t a, int64_t b, StepPart p, int32_t slice = kNone, bool elsewhere = false) {
    if (b <= a) return;
    if (!out_.empty() && out_.back().part == p && out_.back().slice == slice && out_.back().elsewhere == elsewhere &&
        out_.back().end == a) {
      out_.back().end = b;
      return;
    }
    out_.push_back({a, b, p, slice, elsewhere});
  }

  // Time outside any framework slice: the program's code (`base`), split by
  // what the OS saw the thread do: off CPU in I/O or waiting, on CPU in read or
  // write calls (system-call trace, or the read path in its CPU samples).
  void Uncovered(int64_t a, int64_t b, StepPart base) {
    if (base == StepPart::kDispatch) {
      Emit(a, b, base);
      return;
    }
    // The step's own backward pass run by the autograd engine on another
    // thread (CUDA): the step's thread waits for it, and the step's time is its.
    if (elsewhere_ != nullptr) {
      auto it = std::lower_bound(elsewhere_->begin(), elsewhere_->end(), a,
                                 [](const Interval& iv, int64_t at) { return iv.end <= at; });
      int64_t cursor = a;
      for (; it != elsewhere_->end() && it->start < b; ++it) {
        int64_t x = std::max(a, it->start), y = std::min(b, it->end);
        if (y <= x) continue;
        if (x > cursor) OwnCode(cursor, x, base);
        Emit(x, y, it->part, kNone, true);
        cursor = y;
      }
      if (cursor < b) OwnCode(cursor, b, base);
      return;
    }
    OwnCode(a, b, base);
  }

  void OwnCode(int64_t a, int64_t b, StepPart base) {
    const auto& st = t_.thread_states;
    int64_t cursor = a;
    for (size_t r = FirstEndingAfter(st, states_.first, states_.second, a); r < states_.second && st.ts[r] < b; ++r) {
      int64_t x = std::max(a, st.ts[r]), y = std::min(b, st.ts[r] + st.dur[r]);
      if (x > cursor) OnCpu(cursor, x, base);
      model::ThreadState state = st.state[r];
      if (state == model::ThreadState::kRunning || state == model::ThreadState::kUnknown) {
        OnCpu(x, y, base);
      } else {
        bool io = state == model::ThreadState::kDiskSleep;
        int32_t sc = st.syscall[r];
        if (sc >= 0 && static_cast<size_t>(sc) < t_.syscalls.size())
          io = io || SyscallCategory(t_.strings.Get(t_.syscalls.name[static_cast<size_t>(sc)])) == "io";
        if (!io && base == StepPart::kInput && y > x) input_waiting_ += y - x;
        Emit(x, y, io ? StepPart::kIo : base == StepPart::kInput ? StepPart::kInput : StepPart::kIdle);
      }
      cursor = std::max(cursor, y);
    }
    if (cursor < b) OnCpu(cursor, b, base);
  }

  void OnCpu(int64_t a, int64_t b, StepPart base) {
    const auto& sc = t_.syscalls;
    int64_t cursor = a;
    for (size_t r = FirstEndingAfter(sc, syscalls_.first, syscalls_.second, a); r < syscalls_.second && sc.ts[r] < b; ++r) {
      if (SyscallCategory(t_.strings.Get(sc.name[r])) != "io") continue;
      int64_t x = std::max(a, sc.ts[r]), y = std::min(b, sc.ts[r] + sc.dur[r]);
      if (y <= x) continue;
      if (x > cursor) Sampled(cursor, x, base);
      Emit(x, y, StepPart::kIo);
      cursor = y;
    }
    if (cursor < b) Sampled(cursor, b, base);
  }

  // The share of the CPU samples in [a, b) whose stack is in the read/write
  // path is that share of the time in I/O.
  void Sampled(int64_t a, int64_t b, StepPart base) {
    const auto& cs = t_.cpu_samples;
    auto first = cs.ts.begin() + static_cast<std::ptrdiff_t>(samples_.first);
    auto last = cs.ts.begin() + static_cast<std::ptrdiff_t>(samples_.second);
    size_t r0 = static_cast<size_t>(std::lower_bound(first, last, a) - cs.ts.begin());
    size_t r1 = static_cast<size_t>(std::lower_bound(first, last, b) - cs.ts.begin());
    size_t n = r1 - r0, io = 0;
    for (size_t r = r0; r < r1; ++r)
      for (int32_t k = cs.callsite[r]; k >= 0; k = t_.callsites.parent[static_cast<size_t>(k)]) {
        uint32_t fr = t_.callsites.frame[static_cast<size_t>(k)];
        if (t_.frames.kind[fr] != model::FrameKind::kPython && IsIoFrame(t_.strings.Get(t_.frames.function[fr]))) {
          ++io;
          break;
        }
      }
    if (io == 0) {
      Emit(a, b, base);
      return;
    }
    int64_t mid = b - static_cast<int64_t>(static_cast<double>(b - a) * static_cast<double>(io) / static_cast<double>(n));
    Emit(a, mid, base);
    Emit(mid, b, StepPart::kIo);
  }

  const model::Trace& t_;
  const NameClasses& nc_;
  uint32_t track_;
  const std::vector<uint8_t>* flags_;
  std::map<model::StringId, int64_t>* compute_by_op_ = nullptr;
  const std::vector<Interval>* elsewhere_;  // merged, sorted: backward ops on the process's other threads
  const std::vector<Interval>* input_elsewhere_;  // merged, sorted: input pipeline work elsewhere (InputElsewhere)
  int64_t input_in_graphs_ = 0;
  int64_t input_waiting_ = 0;
  std::pair<size_t, size_t> states_, syscalls_, samples_;
  std::vector<Interval> out_;
};

// Device activity (kernels, copies, fills) merged per process of the thread
// that launched it; activity of unknown origin counts for every process.
struct DeviceBusy {
  std::vector<std::vector<std::pair<int64_t, int64_t>>> by_process;  // index: process, last: unknown origin
  bool Has(uint32_t process) const {
    return (process < by_process.size() - 1 && !by_process[process].empty()) || !by_process.back().empty();
  }
};

DeviceBusy BuildDeviceBusy(const model::Trace& t) {
  DeviceBusy d;
  d.by_process.resize(t.processes.size() + 1);
  const auto& s = t.slices;
  for (size_t r = 0; r < t.device.size(); ++r) {
    size_t i = t.device.slice[r];
    SliceKind k = s.kind[i];
    if (k != SliceKind::kKernel && k != SliceKind::kMemcpy && k != SliceKind::kMemset) continue;
    size_t p = t.processes.size();
    int32_t l = t.device.launch[r];
    if (l != kNone) {
      uint32_t trk = s.track[static_cast<size_t>(l)];
      if (trk < t.tracks.size() && t.tracks[trk].process < t.processes.size()) p = t.tracks[trk].process;
    }
    d.by_process[p].emplace_back(s.ts[i], s.end(i));
  }
  for (auto& v : d.by_process) SortAndMerge(v);
  return d;
}

// Device busy time in [a, b) and its idle time by the host part running meanwhile.
void DeviceSplit(const DeviceBusy& d, uint32_t process, const std::vector<Interval>& host, StepBreakdown* out) {
  std::vector<std::pair<int64_t, int64_t>> busy;
  auto add = [&](const std::vector<std::pair<int64_t, int64_t>>& v) {
    auto it = std::lower_bound(v.begin(), v.end(), std::make_pair(out->ts, INT64_MIN));
    if (it != v.begin() && std::prev(it)->second > out->ts) --it;
    for (; it != v.end() && it->first < out->ts + out->dur; ++it)
      busy.emplace_back(std::max(it->first, out->ts), std::min(it->second, out->ts + out->dur));
  };
  if (process < d.by_process.size() - 1) add(d.by_process[process]);
  add(d.by_process.back());
  SortAndMerge(busy);
  const auto& merged = busy;
  out->device_busy = 0;
  for (auto [a, b] : merged) out->device_busy += b - a;
  // Where the step's last synchronization begins: the last run of adjoining
  // sync pieces (a sync's nested calls are pieces of their own).
  int64_t last_sync = INT64_MAX;
  for (size_t k = host.size(); k-- > 0;) {
    if (host[k].part != StepPart::kSync) {
      if (last_sync != INT64_MAX) break;
      continue;
    }
    if (last_sync != INT64_MAX && host[k].end != last_sync) break;
    last_sync = host[k].start;
  }
  // Idle stretches between busy ones, walked with the host intervals.
  size_t h = 0, g = 0;
  int64_t cursor = out->ts;
  auto idle = [&](int64_t a, int64_t b) {
    while (h < host.size() && host[h].end <= a) ++h;
    // An earlier sync that returns in the stretch (the device ran dry under
    // it, or while it returned) claims the stretch from the sync's start on,
    // as HostSync's rule counts a sync's cost.
    while (g < host.size() && host[g].end < a) ++g;
    int64_t claim = INT64_MAX;
    for (size_t k = g; k < host.size() && host[k].start < b && host[k].start < last_sync; ++k)
      if (host[k].part == StepPart::kSync) {
        claim = std::max(a, host[k].start);
        break;
      }
    for (size_t k = h; k < host.size() && host[k].start < b; ++k) {
      int64_t x = std::max(a, host[k].start), y = std::min(b, host[k].end);
      if (y <= x) continue;
      out->device_idle[static_cast<size_t>(host[k].part)] += y - x;
      if (y > claim) out->device_idle_after_sync[static_cast<size_t>(host[k].part)] += y - std::max(x, claim);
    }
  };
  for (auto [a, b] : merged) {
    if (a > cursor) idle(cursor, a);
    cursor = std::max(cursor, b);
  }
  if (cursor < out->ts + out->dur) idle(cursor, out->ts + out->dur);
}

}  // namespace

const char* StepPartName(StepPart p) {
  switch (p) {
    case StepPart::kInput: return "input";
    case StepPart::kCompute: return "compute";
    case StepPart::kDispatch: return "dispatch";
    case StepPart::kAllocation: return "allocation";
    case StepPart::kSync: return "sync";
    case StepPart::kCopy: return "copy";
    case StepPart::kIo: return "io";
    case StepPart::kPython: return "python";
    case StepPart::kIdle: return "idle";
  }
  return "?";
}

bool IsDataLoadingName(std::string_view n) {
  return Contains(n, "DataLoader") || Contains(n, "_next_data") || Contains(n, "data_wait") ||
         Contains(n, "load_batch") || Contains(n, "next_batch") || Contains(n, "fetch_batch") ||
         n == "strata::data_wait" || Contains(n, "input_pipeline") || StartsWith(n, "tf.data.") ||
         StartsWith(n, "IteratorGetNext");
}

bool IsGraphRunName(std::string_view n) {
  return StartsWith(n, "tf.function ") || n == "tf.Session.run" || n == "keras.train_step" || n == "keras.test_step" ||
         n == "keras.predict_step" || StartsWith(n, "jax.jit ") || StartsWith(n, "jax.pmap ") || n == "ort.run";
}

bool IsSyncName(std::string_view n) {
  return Contains(n, "Synchronize") || Contains(n, "clFinish") || Contains(n, "clWaitForEvents") ||
         Contains(n, "hsa_signal_wait") || IsDeviceReadName(n) || IsJaxWaitName(n);
}

bool IsJaxWaitName(std::string_view n) { return n == "jax.block_until_ready" || n == "jax.device_read"; }

bool IsDeviceReadName(std::string_view n) { return n == "aten::item" || n == "aten::_local_scalar_dense"; }

std::vector<uint8_t> HostCallFlags(const model::Trace& t) {
  std::vector<uint8_t> flags(t.slices.size(), 0);
  auto mark = [&](int32_t s, uint8_t bit) {
    for (; s != kNone && !(flags[static_cast<size_t>(s)] & bit); s = t.slices.parent[static_cast<size_t>(s)])
      flags[static_cast<size_t>(s)] |= bit;
  };
  for (size_t r = 0; r < t.device.size(); ++r) mark(t.device.launch[r], kLaunches);
  for (size_t i = 0; i < t.slices.size(); ++i)
    if (t.slices.kind[i] == SliceKind::kRuntime || t.slices.kind[i] == SliceKind::kDriver)
      mark(static_cast<int32_t>(i), kCallsRuntime);
  return flags;
}

bool IsSyncSlice(const model::Trace& t, const NameClasses& nc, size_t i, const std::vector<uint8_t>& flags) {
  uint16_t c = nc[t.slices.name[i]];
  return (c & kNameSync) && (!(c & kNameDeviceRead) || (flags[i] & kCallsRuntime));
}

bool IsCopyName(std::string_view n) {
  return n == "aten::copy_" || n == "aten::to" || n == "aten::_to_copy" || n == "aten::pin_memory" ||
         n == "aten::_pin_memory" || Contains(n, "Memcpy") || StartsWith(n, "clEnqueueRead") ||
         StartsWith(n, "clEnqueueWrite") || StartsWith(n, "clEnqueueCopy");
}

bool IsFileIoName(std::string_view n) { return n == "torch.save"; }

bool IsAllocationName(std::string_view n) {
  static constexpr std::string_view kOps[] = {
      "aten::empty", "aten::empty_strided", "aten::empty_like", "aten::new_empty", "aten::new_empty_strided",
      "aten::zeros", "aten::zeros_like", "aten::new_zeros", "aten::ones", "aten::ones_like", "aten::new_ones",
      "aten::full", "aten::full_like", "aten::new_full", "aten::resize_"};
  for (std::string_view o : kOps)
    if (n == o) return true;
  return Contains(n, "Malloc") || Contains(n, "MemAlloc") || Contains(n, "HostAlloc") || Contains(n, "cudaFree") ||
         Contains(n, "cuMemFree") || Contains(n, "hipFree") || n == "clCreateBuffer";
}

double StepBreakdowns::PerStep(StepPart p) const {
  return counted ? static_cast<double>(host[static_cast<size_t>(p)]) / static_cast<double>(counted) : 0;
}

double StepBreakdowns::Pct(StepPart p) const {
  return counted_ns > 0 ? 100.0 * static_cast<double>(host[static_cast<size_t>(p)]) / static_cast<double>(counted_ns) : 0;
}

namespace {

// Intervals sorted by start -> merged (overlaps joined).
std::vector<HostInterval> Merge(std::vector<HostInterval> v) {
  std::sort(v.begin(), v.end(), [](const HostInterval& x, const HostInterval& y) { return x.start < y.start; });
  std::vector<HostInterval> out;
  for (const HostInterval& iv : v) {
    if (!out.empty() && iv.start <= out.back().end) out.back().end = std::max(out.back().end, iv.end);
    else out.push_back(iv);
  }
  return out;
}

// When the input pipeline of a process works on its own threads (tf.data's
// Python functions and generators: strata._tf's "tf.data.*" spans, and all
// that those threads run on a CPU, tf.data's own work around the functions
// included) while its framework's compute threads (TensorFlow's "tf_*" pools
// other than tf.data's) are off CPU: the times a graph the step runs waits for
// its input.
std::vector<HostInterval> InputElsewhere(const model::Trace& t, uint32_t process, uint32_t step_track) {
  std::vector<HostInterval> input, compute;
  std::set<uint32_t> input_threads;
  for (size_t i = 0; i < t.slices.size(); ++i) {
    uint32_t trk = t.slices.track[i];
    if (trk == step_track || trk >= t.tracks.size() || t.tracks[trk].process != process) continue;
    if (t.slices.kind[i] != SliceKind::kSpan || !StartsWith(t.strings.Get(t.slices.name[i]), "tf.data.")) continue;
    input.push_back({t.slices.ts[i], t.slices.end(i), StepPart::kInput, kNone});
    input_threads.insert(trk);
  }
  if (input.empty()) return {};
  for (size_t r = 0; r < t.thread_states.size(); ++r) {
    uint32_t trk = t.thread_states.track[r];
    if (trk >= t.tracks.size() || t.tracks[trk].process != process || trk == step_track ||
        t.thread_states.state[r] != model::ThreadState::kRunning)
      continue;
    HostInterval iv{t.thread_states.ts[r], t.thread_states.ts[r] + t.thread_states.dur[r], StepPart::kCompute, kNone};
    std::string_view n = t.strings.Get(t.tracks[trk].name);
    if (input_threads.count(trk)) {
      iv.part = StepPart::kInput;
      input.push_back(iv);
    } else if (StartsWith(n, "tf_") && !StartsWith(n, "tf_data")) {
      compute.push_back(iv);
    }
  }
  input = Merge(std::move(input));
  compute = Merge(std::move(compute));
  // input minus compute
  std::vector<HostInterval> out;
  size_t c = 0;
  for (const HostInterval& iv : input) {
    int64_t cursor = iv.start;
    while (c < compute.size() && compute[c].end <= cursor) ++c;
    for (size_t k = c; k < compute.size() && compute[k].start < iv.end; ++k) {
      if (compute[k].start > cursor) out.push_back({cursor, compute[k].start, StepPart::kInput, kNone});
      cursor = std::max(cursor, compute[k].end);
    }
    if (cursor < iv.end) out.push_back({cursor, iv.end, StepPart::kInput, kNone});
  }
  return out;
}

}  // namespace

StepBreakdowns BreakdownWindows(const model::Trace& t, const std::vector<StepWindow>& windows,
                                std::vector<std::vector<HostInterval>>* timelines) {
  StepBreakdowns out;
  if (timelines != nullptr) timelines->clear();
  // What does not depend on the windows, once per trace while a Memo lives
  // (the training section and the findings both break steps down).
  struct Base {
    DeviceBusy device;
    std::vector<uint8_t> flags;
    // Outermost backward ops per thread (autograd's engine threads run them
    // while the thread that called backward() waits).
    std::map<uint32_t, std::vector<Interval>> backward;
  };
  auto build = [&t]() -> std::shared_ptr<const Base> {
    auto b = std::make_shared<Base>();
    b->device = BuildDeviceBusy(t);
    b->flags = HostCallFlags(t);
    NameClasses classes(t);
    for (size_t i = 0; i < t.slices.size(); ++i) {
      if (t.slices.kind[i] != SliceKind::kOp) continue;
      // Backward nodes (strata's observer), or the engine's wrapper of them (PyTorch profiler).
      int32_t row = t.OpRow(static_cast<uint32_t>(i));
      bool backward_node = row != kNone && t.ops.scope[static_cast<size_t>(row)] == model::OpScope::kBackward;
      if (!backward_node && !classes.Is(t.slices.name[i], kNameBackwardEngine)) continue;
      bool outermost = true;
      for (int32_t p = t.slices.parent[i]; p != kNone && outermost; p = t.slices.parent[static_cast<size_t>(p)])
        outermost = t.slices.kind[static_cast<size_t>(p)] != SliceKind::kOp;
      if (outermost)
        b->backward[t.slices.track[i]].push_back(
            {t.slices.ts[i], t.slices.end(i), (b->flags[i] & kLaunches) ? StepPart::kDispatch : StepPart::kCompute, kNone});
    }
    return b;
  };
  Memo* memo = Memo::Of(t);
  std::shared_ptr<const Base> base = memo ? memo->Get<std::shared_ptr<const Base>>("breakdown_base", build) : build();
  const DeviceBusy& device = base->device;
  const std::vector<uint8_t>& flags = base->flags;
  const auto& backward = base->backward;
  NameClasses classes(t);
  std::map<uint32_t, std::vector<Interval>> elsewhere_of;
  std::map<uint32_t, std::vector<Interval>> input_of;  // per step thread: InputElsewhere
  std::map<model::StringId, int64_t> compute_by_op;
  bool any_device = false;
  for (const StepWindow& w : windows) {
    StepBreakdown b;
    b.number = w.number;
    b.ts = w.ts;
    b.dur = w.dur;
    b.counted = w.counted;
    // The backward ops beside each step thread, gathered once per thread (steps share their thread).
    auto [slot, fresh] = elsewhere_of.try_emplace(w.track);
    std::vector<Interval>& merged = slot->second;
    uint32_t proc = w.track < t.tracks.size() ? t.tracks[w.track].process : model::kNoProcess;
    if (fresh && proc != model::kNoProcess) {
      std::vector<Interval> elsewhere;
      for (const auto& [trk, ivs] : backward)
        if (trk != w.track && t.tracks[trk].process == proc) elsewhere.insert(elsewhere.end(), ivs.begin(), ivs.end());
      std::sort(elsewhere.begin(), elsewhere.end(), [](const Interval& x, const Interval& y) { return x.start < y.start; });
      for (const Interval& iv : elsewhere) {
        if (!merged.empty() && iv.start < merged.back().end) merged.back().end = std::max(merged.back().end, iv.end);
        else merged.push_back(iv);
      }
    }
    auto [islot, ifresh] = input_of.try_emplace(w.track);
    if (ifresh && proc != model::kNoProcess) islot->second = InputElsewhere(t, proc, w.track);
    StepSweep sweep(t, classes, w.track, &flags, merged.empty() ? nullptr : &merged,
                    islot->second.empty() ? nullptr : &islot->second);
    if (w.counted) sweep.KeepComputeByOp(&compute_by_op);
    std::vector<Interval> host = sweep.Run(w.ts, w.ts + w.dur);
    for (const Interval& iv : host) b.host[static_cast<size_t>(iv.part)] += iv.end - iv.start;
    uint32_t process = w.track < t.tracks.size() ? t.tracks[w.track].process : model::kNoProcess;
    if (device.Has(process)) {
      DeviceSplit(device, process, host, &b);
      any_device = true;
    }
    if (timelines != nullptr) {
      if (!w.detail) host.clear(), host.shrink_to_fit();
      timelines->push_back(std::move(host));
    }
    if (b.counted) {
      ++out.counted;
      out.counted_ns = SatAdd(out.counted_ns, b.dur);
      out.input_in_graphs = SatAdd(out.input_in_graphs, sweep.input_in_graphs());
      out.input_waiting = SatAdd(out.input_waiting, sweep.input_waiting());
      for (size_t k = 0; k < kStepParts; ++k) {
        out.host[k] = SatAdd(out.host[k], b.host[k]);
        out.device_idle[k] = SatAdd(out.device_idle[k], b.device_idle[k]);
        out.device_idle_after_sync[k] = SatAdd(out.device_idle_after_sync[k], b.device_idle_after_sync[k]);
      }
      if (b.device_busy >= 0) out.device_busy = SatAdd(std::max<int64_t>(out.device_busy, 0), b.device_busy);
    }
    out.steps.push_back(b);
  }
  if (!any_device) out.device_busy = -1;
  for (const auto& [name, ns] : compute_by_op) out.compute_ops.emplace_back(std::string(t.strings.Get(name)), ns);
  std::sort(out.compute_ops.begin(), out.compute_ops.end(),
            [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  return out;
}

StepBreakdowns BreakdownSteps(const model::Trace& t, const TrainingSteps& steps) {
  std::vector<StepWindow> windows;
  windows.reserve(steps.steps.size());
  for (const TrainingStep& st : steps.steps)
    windows.push_back({st.number, st.ts, st.dur,
                       st.slice != kNone ? t.slices.track[static_cast<size_t>(st.slice)] : UINT32_MAX, !st.skipped});
  return BreakdownWindows(t, windows);
}

}  // namespace strata::analysis
