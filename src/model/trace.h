// The analysis model: a trace as columnar tables, whatever format it came from.
//
// Importers (strata CTF, PyTorch-profiler JSON, ...) fill these tables; analyses
// read only them. Columns are arrays (model/column.h: owned, a view of a mapped
// index, or spilled to a file) so that scans over 100M slices stay
// cache-friendly and the memory cost per slice is a few dozen bytes.
//
// Time is int64 nanoseconds on the trace's clock (CLOCK_MONOTONIC for strata
// traces; the source's own epoch for imported ones).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/columns.h"
#include "model/os_tables.h"

namespace strata::model {

using StringId = uint32_t;  // 0 is the empty string
inline constexpr int32_t kNone = -1;
// Track::process of tracks that belong to no process (CPU tracks).
inline constexpr uint32_t kNoProcess = UINT32_MAX;

class StringPool {
 public:
  StringPool();
  StringPool(const StringPool&) = delete;
  StringPool& operator=(const StringPool&) = delete;
  StringPool(StringPool&&) = default;
  StringPool& operator=(StringPool&&) = default;

  StringId Intern(std::string_view s);
  // Returns kNotFound if absent.
  StringId Find(std::string_view s) const;
  std::string_view Get(StringId id) const { return views_[id]; }
  size_t size() const { return views_.size(); }
  static constexpr StringId kNotFound = UINT32_MAX;

  // Takes `views` (views[0] empty, no string twice) as the pool's strings
  // without copying them: `owner` keeps their bytes alive (a mapped index).
  // The lookup map is built on the first Find or Intern, not before.
  void Adopt(std::vector<std::string_view> views, std::shared_ptr<const void> owner);

 private:
  void EnsureIds() const;

  std::deque<std::string> storage_;  // stable addresses for the views
  std::vector<std::string_view> views_;
  mutable std::unordered_map<std::string_view, StringId> ids_;
  // Set after Adopt: ids_ is built under it on first use (analyses call Find
  // from several threads).
  mutable std::unique_ptr<std::once_flag> ids_once_;
  std::shared_ptr<const void> owner_;
};

struct Process {
  int64_t pid = 0;
  uint64_t instance = 0;  // distinguishes the images of one pid across exec
  int64_t ppid = -1;
  StringId name = 0;      // executable (or the source's process name)
  StringId cmdline = 0;
  int64_t start_realtime_ns = 0;
  int64_t rank = -1;      // distributed rank when known
  bool is_device = false; // a GPU "process" in imported traces
  int32_t device = kNone;
};

enum class TrackKind : uint8_t {
  kThread,       // a CPU thread
  kDeviceQueue,  // a CUDA stream, OpenCL queue, HSA queue
  kCpu,          // a CPU core (OS-level events)
};

struct Track {
  TrackKind kind = TrackKind::kThread;
  uint32_t process = 0;  // index into Trace::processes; kNoProcess for CPU tracks
  int64_t tid = 0;       // thread id, queue/stream id for device tracks, CPU number for CPU tracks
  StringId name = 0;
  int32_t device = kNone;
  uint64_t events = 0;   // events read from the source for this track
  uint64_t lost = 0;     // events the recorder could not record (exact counts)
};

// What a slice is. Analyses key off this, never off names.
enum class SliceKind : uint8_t {
  kSpan,        // instrumentation span (strata API, record_function, user annotation)
  kStep,        // a model-level step (training iteration)
  kOp,          // a framework operator (aten::mm, a TF op)
  kModule,      // a model module scope (nn.Module forward)
  kPython,      // a Python function
  kRuntime,     // an accelerator runtime API call (cudaLaunchKernel, clEnqueue*)
  kDriver,      // an accelerator driver API call (cuLaunchKernel)
  kKernel,      // device: a kernel execution
  kMemcpy,      // device: a copy
  kMemset,      // device: a fill
  kDeviceSync,  // device: a synchronization record (cuda_sync)
  kAnnotation,  // device-side range (gpu_user_annotation)
  kOther,
};
const char* SliceKindName(SliceKind k);
bool IsDeviceKind(SliceKind k);

#define STRATA_SLICE_COLUMNS(X)                                                              \
  X(int64_t, ts)                                                                             \
  X(int64_t, dur)                                                                            \
  X(uint32_t, track)                                                                         \
  X(StringId, name)                                                                          \
  X(SliceKind, kind)                                                                         \
  X(uint16_t, depth)                                                                         \
  X(int32_t, parent) /* kNone at the top of a track */                                       \
  X(uint64_t, arg)   /* one numeric argument (strata span arg, step number, seq number) */

struct SliceTable {
  STRATA_COLUMNS(STRATA_SLICE_COLUMNS)

  size_t size() const { return ts.size(); }
  uint32_t Add(int64_t t, int64_t d, uint32_t trk, StringId n, SliceKind k, uint64_t a = 0) {
    ts.push_back(t);
    dur.push_back(d);
    track.push_back(trk);
    name.push_back(n);
    kind.push_back(k);
    depth.push_back(0);
    parent.push_back(kNone);
    arg.push_back(a);
    return static_cast<uint32_t>(ts.size() - 1);
  }
  int64_t end(size_t i) const { return ts[i] + dur[i]; }
};

enum class CopyKind : uint8_t { kUnknown, kHtoD, kDtoH, kDtoD, kHtoH, kPtoP };
const char* CopyKindName(CopyKind k);

// One row per device slice (kernel, memcpy, memset, sync, and other queue work
// such as OpenCL maps, which are kOther slices on the device-queue track).
//
// How the strata importer fills it (accel_events.cc), for every source API:
//  - the slice is on the kDeviceQueue track of (process, device, queue);
//    kernels are kKernel named by the kernel, copies kMemcpy named
//    "Memcpy HtoD" etc., fills kMemset "Memset", syncs kDeviceSync named by
//    their type ("Stream Synchronize", "Barrier", ...);
//  - `launch` is the runtime/driver API slice (kRuntime/kDriver, on the thread
//    that made the call) with the same correlation id in the same process, and
//    a FlowTable row (id = correlation) joins the two;
//  - kernels' queued/submitted device times, when the source has them, are
//    ArgTable entries "queued_ns"/"submitted_ns" of the kernel slice (trace clock).
using Dim3 = std::array<uint32_t, 3>;
#define STRATA_DEVICE_ACTIVITY_COLUMNS(X)                                                    \
  X(uint32_t, slice)                                                                         \
  X(int32_t, device)      /* the source's device number (Device::id) */                      \
  X(int64_t, stream)      /* queue/stream id (the track's tid) */                            \
  X(uint64_t, correlation)                                                                   \
  X(int32_t, launch)      /* the runtime-API slice that caused it; kNone if unknown */       \
  X(uint64_t, bytes)      /* copies and fills */                                             \
  X(CopyKind, copy_kind)                                                                     \
  X(int8_t, pinned)       /* host memory of a copy: 1 pinned, 0 pageable, -1 unknown */      \
  X(Dim3, grid)                                                                              \
  X(Dim3, block)                                                                             \
  X(uint32_t, shared_mem) /* bytes, static + dynamic */                                      \
  X(uint32_t, registers)  /* per thread */                                                   \
  X(float, occupancy)     /* estimated achieved occupancy, -1 unknown */

struct DeviceActivityTable {
  STRATA_COLUMNS(STRATA_DEVICE_ACTIVITY_COLUMNS)

  size_t size() const { return slice.size(); }
  uint32_t Add(uint32_t s, int32_t dev, int64_t strm, uint64_t corr) {
    slice.push_back(s);
    device.push_back(dev);
    stream.push_back(strm);
    correlation.push_back(corr);
    launch.push_back(kNone);
    bytes.push_back(0);
    copy_kind.push_back(CopyKind::kUnknown);
    pinned.push_back(-1);
    grid.push_back({0, 0, 0});
    block.push_back({0, 0, 0});
    shared_mem.push_back(0);
    registers.push_back(0);
    occupancy.push_back(-1.0f);
    return static_cast<uint32_t>(slice.size() - 1);
  }
};

#define STRATA_INSTANT_COLUMNS(X) X(int64_t, ts) X(uint32_t, track) X(StringId, name)
struct InstantTable {
  STRATA_COLUMNS(STRATA_INSTANT_COLUMNS)
  size_t size() const { return ts.size(); }
  void Add(int64_t t, uint32_t trk, StringId n) {
    ts.push_back(t);
    track.push_back(trk);
    name.push_back(n);
  }
};

struct CounterSeries {
  StringId name = 0;
  uint32_t process = 0;
  StringId unit = 0;
  int32_t track = kNone;  // a thread's own series (e.g. its CPU utilization); kNone for process-wide
};

#define STRATA_COUNTER_COLUMNS(X) X(uint32_t, series) X(int64_t, ts) X(double, value)
struct CounterTable {
  STRATA_COLUMNS(STRATA_COUNTER_COLUMNS)
  size_t size() const { return ts.size(); }
  void Add(uint32_t s, int64_t t, double v) {
    series.push_back(s);
    ts.push_back(t);
    value.push_back(v);
  }
};

// Flow links (launch -> kernel, producer -> consumer). Slice indices.
#define STRATA_FLOW_COLUMNS(X) X(uint64_t, id) X(int32_t, from) X(int32_t, to)
struct FlowTable {
  STRATA_COLUMNS(STRATA_FLOW_COLUMNS)
  size_t size() const { return id.size(); }
  void Add(uint64_t i, int32_t f, int32_t t) {
    id.push_back(i);
    from.push_back(f);
    to.push_back(t);
  }
};

// Typed key/value arguments of slices that have no column of their own.
// Finalize() sorts the rows by slice, so Trace::FindArg can binary-search them.
#define STRATA_ARG_COLUMNS(X)                                                               \
  X(uint32_t, slice)                                                                         \
  X(StringId, key)                                                                           \
  X(StringId, str) /* string value (a JSON array or object is kept as its text), or 0 */     \
  X(double, num)   /* numeric value (NaN when the value is a string) */
struct ArgTable {
  STRATA_COLUMNS(STRATA_ARG_COLUMNS)
  size_t size() const { return slice.size(); }
  void Add(uint32_t s, StringId k, StringId sv, double n) {
    slice.push_back(s);
    key.push_back(k);
    str.push_back(sv);
    num.push_back(n);
  }
};

// The args of slices asked in increasing slice order (a pass over the slices):
// one forward walk of the sorted rows instead of a binary search per lookup.
class ArgCursor {
 public:
  explicit ArgCursor(const ArgTable& a) : a_(a) {}
  // Row of `key` among the args of `slice`, or kNone. `slice` never decreases
  // from one call to the next.
  int32_t Find(uint32_t slice, StringId key) {
    if (slice != at_) {
      while (pos_ < a_.size() && a_.slice[pos_] < slice) ++pos_;
      at_ = slice;
    }
    for (size_t i = pos_; i < a_.size() && a_.slice[i] == slice; ++i)
      if (a_.key[i] == key) return static_cast<int32_t>(i);
    return kNone;
  }

 private:
  const ArgTable& a_;
  size_t pos_ = 0;
  uint32_t at_ = UINT32_MAX;
};

// Which allocator a memory event comes from. A framework's caching allocator
// (PyTorch's, through strata's observer or the profiler's "[memory]" events)
// hands out blocks of the memory it got from the accelerator runtime
// (cudaMalloc, seen by CUPTI's memory activity, with module statics): two
// levels of the same bytes, never summed.
enum class MemoryLayer : uint8_t {
  kAllocator = 0,  // tensors: what the program holds
  kRuntime = 1,    // the accelerator runtime's allocations: what the process holds on the device
};

// "allocator" or "runtime": the layer's name in reports and exports.
inline const char* MemoryLayerName(MemoryLayer l) { return l == MemoryLayer::kRuntime ? "runtime" : "allocator"; }

// The name of a memory counter in exports: "memory allocated (GPU 0)" for the
// framework allocator's level, "runtime memory (GPU 0)" for the runtime's.
inline std::string MemoryCounterName(int32_t device, MemoryLayer l) {
  std::string where = device < 0 ? std::string("host") : "GPU " + std::to_string(device);
  return (l == MemoryLayer::kRuntime ? "runtime memory (" : "memory allocated (") + where + ")";
}

// Memory allocator events: positive bytes allocate, negative free.
#define STRATA_MEMORY_COLUMNS(X)                                                            \
  X(int64_t, ts)                                                                             \
  X(uint32_t, track)                                                                         \
  X(int32_t, device) /* kNone for host memory */                                             \
  X(uint64_t, addr)                                                                          \
  X(int64_t, bytes)                                                                          \
  X(int64_t, total_allocated) /* as reported by the allocator, -1 unknown */                 \
  X(int64_t, total_reserved)                                                                 \
  X(MemoryLayer, layer)
struct MemoryTable {
  STRATA_COLUMNS(STRATA_MEMORY_COLUMNS)
  size_t size() const { return ts.size(); }
  void Add(int64_t t, uint32_t trk, int32_t dev, uint64_t a, int64_t b, int64_t allocated, int64_t reserved,
           MemoryLayer l = MemoryLayer::kAllocator) {
    ts.push_back(t);
    track.push_back(trk);
    device.push_back(dev);
    addr.push_back(a);
    bytes.push_back(b);
    total_allocated.push_back(allocated);
    total_reserved.push_back(reserved);
    layer.push_back(l);
  }
};

// An accelerator as one process saw it. Fields are 0 / empty when unknown.
// Strata traces: one row per (process, device number) from the collectors'
// device descriptions; `id` is the number DeviceActivityTable.device and
// Track.device use (numbering: format/schema_accel.h).
struct Device {
  uint32_t process = 0;
  int32_t id = 0;
  std::string api;            // "cuda", "opencl", "hsa"
  std::string name;           // "NVIDIA H100 80GB HBM3", "pthread-skylake-avx512"
  std::string vendor;
  uint32_t compute_units = 0; // SMs, OpenCL compute units, CUs
  uint32_t clock_khz = 0;
  uint64_t memory_bytes = 0;
  double memory_bandwidth = 0;  // bytes/s
  double peak_flops_f64 = 0;    // FLOP/s per precision
  double peak_flops_f32 = 0;
  double peak_flops_f16 = 0;
  uint32_t compute_major = 0, compute_minor = 0;  // CUDA compute capability
  std::string properties;     // free text: driver version, ...
};

// --- Framework level (PyTorch today; TF, JAX, ONNX Runtime feed the same tables) ---

// How a framework op was invoked.
enum class OpScope : uint8_t {
  kFunction,     // an operator call (aten::mm), or a framework-internal range
  kBackward,     // an autograd node run by backward() (MmBackward0)
  kUser,         // a user/library annotation (record_function; its slice is a kSpan)
  kTorchScript,  // a TorchScript function
};
const char* OpScopeName(OpScope s);

// One row per recorded framework op (kOp slices, and kSpan slices of
// record_function scopes). Sorted by slice after Trace::Finalize, so
// OpRow(slice) is a binary search.
//
// seq: autograd sequence number: forward ops that record history carry the
// number of the backward node they create; a backward node carries its own. -1 none.
// forward: backward nodes: the forward op that created them (same sequence
// number on the forward thread; the innermost such op). kNone otherwise.
// shapes, dtypes, flops, bytes: the detail tier (kNone / 0 / -1 when not
// recorded): input shapes and dtypes as the PyTorch profiler prints them,
// estimated FLOPs and bytes moved. An op nested in another estimated op repeats
// part of its parent's estimate: totals count only the outermost estimated op.
// site: where the program called it (0: not recorded): "file:line (function)"
// of the Python frame that called a host-reading method (.item(), .tolist(),
// torch.cuda.synchronize) this op runs in, the outermost op of the call.
#define STRATA_OP_COLUMNS(X)                                                                 \
  X(uint32_t, slice)                                                                         \
  X(OpScope, scope)                                                                          \
  X(int64_t, seq)                                                                            \
  X(int32_t, forward)                                                                        \
  X(StringId, shapes)                                                                        \
  X(StringId, dtypes)                                                                        \
  X(int64_t, flops)                                                                          \
  X(int64_t, bytes)                                                                          \
  X(StringId, site)
struct OpTable {
  STRATA_COLUMNS(STRATA_OP_COLUMNS)

  size_t size() const { return slice.size(); }
  uint32_t Add(uint32_t s, OpScope sc, int64_t sq) {
    slice.push_back(s);
    scope.push_back(sc);
    seq.push_back(sq);
    forward.push_back(kNone);
    shapes.push_back(0);
    dtypes.push_back(0);
    flops.push_back(-1);
    bytes.push_back(-1);
    site.push_back(0);
    return static_cast<uint32_t>(slice.size() - 1);
  }
};

// Dataflow edges between slices: `to` consumed a tensor that `from` produced
// (the last op to output it before `to` began). Only the outermost consumer of
// a tensor gets the edge: aten::relu, not the aten::clamp_min it calls.
#define STRATA_EDGE_COLUMNS(X)                                                              \
  X(int32_t, from)                                                                           \
  X(int32_t, to)                                                                             \
  X(uint64_t, tensor) /* the tensor's id in its process (TensorImpl address) */
struct EdgeTable {
  STRATA_COLUMNS(STRATA_EDGE_COLUMNS)
  size_t size() const { return from.size(); }
  void Add(int32_t f, int32_t t, uint64_t tensor_id) {
    from.push_back(f);
    to.push_back(t);
    tensor.push_back(tensor_id);
  }
};

// Communication: each collective or point-to-point op a process handed to its
// backend (torch.distributed's gloo / NCCL / MPI works), from when the backend
// began it (gloo: its worker thread started running it; others: the enqueue)
// until it completed. `seq` numbers a process's works in that order, which
// collectives keep the same on every rank of a group: rows of equal (name,
// seq) in different ranks are the same collective.
#define STRATA_COLLECTIVE_COLUMNS(X)                                                         \
  X(uint32_t, process)                                                                       \
  X(StringId, name)      /* the backend's title: "gloo:all_reduce", "nccl:send 0->1" */      \
  X(uint64_t, seq)                                                                           \
  X(int64_t, ts)         /* began */                                                         \
  X(int64_t, dur)        /* until completed; -1: not completed within the trace */           \
  X(uint32_t, track)     /* the thread it began on */                                        \
  X(uint32_t, end_track) /* the thread that completed it; UINT32_MAX if none */              \
  X(int64_t, bytes)      /* the input tensors' bytes */                                      \
  X(uint32_t, tensors)
struct CollectiveTable {
  STRATA_COLUMNS(STRATA_COLLECTIVE_COLUMNS)
  size_t size() const { return ts.size(); }
};

// A graph recorded as a whole (a TorchScript module's IR when it first ran).
struct Graph {
  uint32_t process = 0;
  StringId name = 0;
  StringId module = 0;  // the compiled module it is (XLA: "jit_train_step", the XLA ops' hlo_module), or 0
  std::vector<StringId> nodes;                         // node kinds ("aten::linear")
  std::vector<std::pair<uint32_t, uint32_t>> edges;    // node index -> node index
  // Per node where the source names them (TensorFlow's graphs): its name in
  // the graph ("sequential/dense/MatMul") and requested device; empty otherwise.
  std::vector<StringId> node_names;
  std::vector<StringId> node_devices;
  // Bytes of the tensor each node produces (its first output; for a _Send,
  // the tensor it sends) where the graph's static shapes give them, -1 where
  // not; empty when the source has none.
  std::vector<int64_t> node_bytes;
};

// A period in which a process recorded framework ops (--ops sampled records
// them in short windows; other modes in one window per process). Analyses scale
// what they saw inside the windows to the whole run.
struct OpWindow {
  uint32_t process = 0;
  int64_t ts = 0;
  int64_t dur = 0;
  bool detail = false;   // shapes/cost/tensor ids recorded too
};

// What a collector said about itself in one process: recorded, partial, unavailable.
struct CollectorStatus {
  uint32_t process = 0;
  std::string collector;
  std::string state;
  std::string detail;
};

struct Trace {
  std::string source;       // "strata", "kineto", ...
  std::string path;
  int64_t clock_offset_ns = 0;  // add to ts for wall-clock time (when known)
  std::string hostname;
  std::string manifest_json;    // strata.json contents, when present
  std::vector<std::string> warnings;  // counted problems that did not stop the import
  // The source wrote timestamps as microseconds with fractions (Kineto since
  // 2023). Kept because tools that work in whole microseconds (HTA) round such
  // traces and not others; analyses reproduce that only when asked to.
  bool source_fractional_us = false;

  StringPool strings;
  std::vector<Process> processes;
  std::vector<Track> tracks;
  SliceTable slices;
  DeviceActivityTable device;
  InstantTable instants;
  std::vector<CounterSeries> counter_series;
  CounterTable counters;
  FlowTable flows;
  ArgTable args;
  MemoryTable memory;
  OpTable ops;
  EdgeTable edges;
  CollectiveTable collectives;
  std::vector<Graph> graphs;
  std::vector<OpWindow> op_windows;
  std::string ops_mode;     // how framework ops were recorded: "all", "sampled", "off" ("" none)
  std::vector<CollectorStatus> collectors;
  std::vector<Device> devices;

  // OS level (os_tables.h).
  ThreadStateTable thread_states;
  SyscallTable syscalls;
  FrameTable frames;
  CallsiteTable callsites;
  CpuSampleTable cpu_samples;
  PageFaultTable page_faults;
  BlockIoTable block_io;

  uint64_t events_read = 0;
  uint64_t events_lost = 0;
  // Stretches of stream files the reader skipped as damaged (strata traces):
  // what they held is unknown, estimated from the streams' bytes per event.
  uint64_t damaged_packets = 0;
  uint64_t damaged_bytes = 0;
  uint64_t damaged_events_estimate = 0;

  // The first and last instants of the trace's slices, instants, counters and
  // thread states ({0, 0} when it has none): one pass over them, so a caller
  // that needs both asks once.
  std::pair<int64_t, int64_t> span_ns() const;
  int64_t start_ns() const;
  int64_t end_ns() const;

  // Sorts slices by (track, ts, longest first), recomputes depth and parent from
  // containment on each track, and remaps every slice reference (device rows,
  // launches, flows, args, ops, edges). Importers call it once, after filling the
  // tables. Returns the remapping (old slice index -> new) for importers that
  // keep slice indices of their own.
  Column<int32_t> Finalize();

  // The deepest slice on `track` that contains `ts`, or kNone (after Finalize).
  int32_t SliceAt(uint32_t track, int64_t ts) const;

  // Row of `key` among the args of `slice`, or kNone (after Finalize).
  int32_t FindArg(uint32_t slice, StringId key) const;

  // Slice index -> device activity row, or kNone (built by Finalize).
  Column<int32_t> device_row_of_slice;
  // The OpTable row of a slice, or kNone (after Finalize).
  int32_t OpRow(uint32_t slice) const;
  // Per track: [first, last) slice indices after Finalize.
  std::vector<std::pair<uint32_t, uint32_t>> track_slices;
};

}  // namespace strata::model
