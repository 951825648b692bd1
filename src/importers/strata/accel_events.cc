// Decoders of the accelerator level (format/schema_accel.h) into the model as
// documented in model/trace.h: API calls become kRuntime/kDriver slices on the
// calling thread's track, device activity becomes kKernel/kMemcpy/kMemset/
// kDeviceSync slices on kDeviceQueue tracks with a DeviceActivityTable row each,
// joined to the API call that caused it by (process, correlation id).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "format/payloads_accel.h"
#include "format/schema.h"
#include "format/schema_accel.h"
#include "importers/common/launch_index.h"
#include "importers/strata/decoder.h"

namespace strata::importers::strata_ctf {
namespace {

// A device event's payload as format/payloads_accel.h declares it (the layout
// the collectors wrote and the schema describes).
template <class P>
P Read(const format::EventView& ev) {
  return format::ReadPayload<P>(ev.payload, ev.size);
}

using format::EventView;
using format::kDeviceStream;
using format::kProcessStream;
using format::kThreadStream;
using model::SliceKind;

struct Arg {
  model::StringId key;
  model::StringId str;
  double num;
};

struct DeviceLink {
  uint32_t row;
  uint32_t process;
  uint64_t correlation;
};

struct RangeBegin {
  uint32_t track;
  int64_t ts;
  model::StringId name;
  model::StringId domain;
};

struct KernelMetric {
  uint32_t process;
  uint32_t device;
  uint64_t correlation;
  double flops_f64, flops_f32, flops_f16, dram_bytes, occupancy;
  model::StringId raw;
};

struct AccelState {
  // Arguments of API calls still open, by OpenSlice::ext.
  std::vector<std::vector<Arg>> open_args;
  std::vector<int32_t> free_slots;
  // (process, correlation) -> API slice (import order; Finalize remaps):
  // indexed at the start of BeforeFinalize, the only place that asks.
  ScopedLaunchIndex api_by_corr;
  std::vector<DeviceLink> links;
  std::map<std::pair<uint32_t, uint64_t>, RangeBegin> range_begins;
  std::map<std::pair<uint32_t, uint64_t>, int64_t> range_ends;
  std::map<std::pair<uint32_t, std::string>, uint64_t> lost;  // running totals: keep the largest
  std::vector<KernelMetric> metrics;
  // Runtime allocations (MemoryTable rows) with the correlation id of the API
  // call that made them: moved to that call's thread before Finalize.
  struct MemoryCall {
    uint32_t row, process;
    uint64_t correlation;
  };
  std::vector<MemoryCall> memory_calls;
  uint64_t orphan_args = 0;
  uint64_t orphan_ends = 0;
  model::StringId k_result = 0, k_kernel = 0, k_grid = 0, k_block = 0, k_shared = 0, k_queued = 0,
                  k_submitted = 0, k_domain = 0, k_bytes = 0;

  void InitKeys(model::StringPool& sp) {
    if (k_result) return;
    k_result = sp.Intern("result");
    k_kernel = sp.Intern("kernel");
    k_grid = sp.Intern("grid");
    k_block = sp.Intern("block");
    k_shared = sp.Intern("shared_mem");
    k_queued = sp.Intern("queued_ns");
    k_submitted = sp.Intern("submitted_ns");
    k_domain = sp.Intern("domain");
    k_bytes = sp.Intern("bytes");
  }
  int32_t NewSlot() {
    if (!free_slots.empty()) {
      int32_t s = free_slots.back();
      free_slots.pop_back();
      return s;
    }
    open_args.emplace_back();
    return static_cast<int32_t>(open_args.size() - 1);
  }
};

bool IsApi(SliceKind k) { return k == SliceKind::kRuntime || k == SliceKind::kDriver; }

// Trace-clock times fit int64 (CLOCK_MONOTONIC ns); larger ones are corrupt and
// would overflow duration arithmetic.
bool BadTimes(LoadContext& ctx, uint64_t ts, uint64_t end) {
  if (ts <= static_cast<uint64_t>(INT64_MAX) && end <= static_cast<uint64_t>(INT64_MAX)) return false;
  ctx.CountWarning("accelerator events with out-of-range timestamps (skipped)");
  return true;
}

SliceKind ApiKind(uint8_t domain) {
  return domain == static_cast<uint8_t>(format::ApiDomain::kDriver) ? SliceKind::kDriver : SliceKind::kRuntime;
}

void AddArg(model::Trace& t, uint32_t slice, const Arg& a) {
  t.args.slice.push_back(slice);
  t.args.key.push_back(a.key);
  t.args.str.push_back(a.str);
  t.args.num.push_back(a.num);
}

void AddNumArg(model::Trace& t, uint32_t slice, model::StringId key, double v) { AddArg(t, slice, {key, 0, v}); }

// The innermost open API call of the thread, or nullptr.
OpenSlice* OpenApi(StreamState& ss) {
  for (size_t k = ss.stack.size(); k-- > 0;)
    if (IsApi(ss.stack[k].kind)) return &ss.stack[k];
  return nullptr;
}

void RememberApi(AccelState& as, uint32_t process, uint64_t correlation, uint32_t slice) {
  if (correlation != 0) as.api_by_corr.Add(process, correlation, slice);
}

// Closes the stack's top slice; an API call's arguments land in the arg table.
void CloseTopSlice(LoadContext& ctx, StreamState& ss, int64_t ts, int64_t result) {
  auto& as = ctx.Ext<AccelState>();
  OpenSlice o = ss.stack.back();
  uint32_t slice = ctx.AddSlice(o, ts, ss.track, ss.stack.size() - 1);
  ss.stack.pop_back();
  if (!IsApi(o.kind)) return;
  RememberApi(as, ss.process->index, o.arg, slice);
  if (result != 0) AddNumArg(ctx.trace(), slice, as.k_result, static_cast<double>(result));
  if (o.ext >= 0 && static_cast<size_t>(o.ext) < as.open_args.size()) {
    for (const Arg& a : as.open_args[static_cast<size_t>(o.ext)]) AddArg(ctx.trace(), slice, a);
    as.open_args[static_cast<size_t>(o.ext)].clear();
    as.free_slots.push_back(o.ext);
  }
}

std::string Dim3(uint32_t x, uint32_t y, uint32_t z) {
  return std::to_string(x) + "x" + std::to_string(y) + "x" + std::to_string(z);
}

const char* CopyName(uint8_t kind) {
  switch (static_cast<format::CopyKind>(kind)) {
    case format::CopyKind::kHtoD: return "Memcpy HtoD";
    case format::CopyKind::kDtoH: return "Memcpy DtoH";
    case format::CopyKind::kDtoD: return "Memcpy DtoD";
    case format::CopyKind::kHtoH: return "Memcpy HtoH";
    case format::CopyKind::kPtoP: return "Memcpy PtoP";
    case format::CopyKind::kUnknown: break;
  }
  return "Memcpy";
}

const char* SyncName(uint8_t type) {
  switch (static_cast<format::SyncType>(type)) {
    case format::SyncType::kEventSynchronize: return "Event Synchronize";
    case format::SyncType::kStreamWaitEvent: return "Stream Wait Event";
    case format::SyncType::kStreamSynchronize: return "Stream Synchronize";
    case format::SyncType::kContextSynchronize: return "Context Synchronize";
    case format::SyncType::kBarrier: return "Barrier";
    case format::SyncType::kMarker: return "Marker";
    case format::SyncType::kWaitEvents: return "Wait For Events";
    case format::SyncType::kUnknown: break;
  }
  return "Synchronize";
}

int8_t Pinned(uint8_t memory_kind) {
  switch (static_cast<format::MemoryKind>(memory_kind)) {
    case format::MemoryKind::kPinned: return 1;
    case format::MemoryKind::kPageable: return 0;
    default: return -1;
  }
}

// Device-stream helpers: the stream's track carries its device and queue.
struct DeviceSlice {
  uint32_t slice;
  uint32_t row;
};

DeviceSlice AddDeviceSlice(LoadContext& ctx, StreamState& ss, int64_t ts, uint64_t end, model::StringId name,
                           SliceKind kind, uint64_t correlation) {
  model::Trace& t = ctx.trace();
  if (ts < 0 || end > static_cast<uint64_t>(INT64_MAX)) {
    ctx.CountWarning("accelerator events with out-of-range timestamps (clamped)");
    ts = std::max<int64_t>(ts, 0);
    end = 0;
  }
  int64_t e = static_cast<int64_t>(end);
  if (end == 0 || e < ts) {
    ctx.CountWarning("device activities without a valid end time (duration 0)");
    e = ts;
  }
  uint32_t slice = t.slices.Add(ts, e - ts, ss.track, name, kind, correlation);
  const model::Track& trk = t.tracks[ss.track];
  uint32_t row = t.device.Add(slice, trk.device, trk.tid, correlation);
  if (correlation != 0) ctx.Ext<AccelState>().links.push_back({row, ss.process->index, correlation});
  return {slice, row};
}

// A kernel's or a copy's fields, whichever form (wide or narrow) carried them.
struct KernelFields {
  uint64_t end = 0, correlation = 0;
  uint32_t name = 0;
  uint32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  uint32_t shared_static = 0, shared_dynamic = 0, registers = 0;
  uint64_t queued = 0, submitted = 0;
};

void AddKernel(LoadContext& ctx, StreamState& ss, uint64_t ts, const KernelFields& k) {
  auto& as = ctx.Ext<AccelState>();
  as.InitKeys(ctx.trace().strings);
  model::StringId name = ctx.Name(*ss.process, k.name);
  DeviceSlice d = AddDeviceSlice(ctx, ss, static_cast<int64_t>(ts), k.end, name, SliceKind::kKernel, k.correlation);
  model::DeviceActivityTable& dev = ctx.trace().device;
  std::copy(std::begin(k.grid), std::end(k.grid), dev.grid[d.row].begin());
  std::copy(std::begin(k.block), std::end(k.block), dev.block[d.row].begin());
  dev.shared_mem[d.row] = k.shared_static + k.shared_dynamic;
  dev.registers[d.row] = k.registers;
  if (k.queued) AddNumArg(ctx.trace(), d.slice, as.k_queued, static_cast<double>(k.queued));
  if (k.submitted) AddNumArg(ctx.trace(), d.slice, as.k_submitted, static_cast<double>(k.submitted));
}

struct CopyFields {
  uint64_t end = 0, correlation = 0, bytes = 0;
  uint8_t kind = 0, src_kind = 0, dst_kind = 0;
};

// The fields a record's wide and narrow forms share (the same names in both
// payloads); `end` from the wide form's end or the narrow form's duration.
template <class P>
KernelFields KernelOf(const P& p, uint64_t end) {
  KernelFields k;
  k.end = end;
  k.correlation = p.correlation;
  k.name = p.name;
  k.grid[0] = p.grid_x, k.grid[1] = p.grid_y, k.grid[2] = p.grid_z;
  k.block[0] = p.block_x, k.block[1] = p.block_y, k.block[2] = p.block_z;
  k.shared_static = p.shared_static;
  k.shared_dynamic = p.shared_dynamic;
  k.registers = p.registers;
  return k;
}

template <class P>
CopyFields CopyOf(const P& p, uint64_t end) {
  CopyFields c;
  c.end = end;
  c.correlation = p.correlation;
  c.bytes = p.bytes;
  c.kind = p.copy_kind;
  c.src_kind = p.src_kind;
  c.dst_kind = p.dst_kind;
  return c;
}

void AddCopy(LoadContext& ctx, StreamState& ss, uint64_t ts, const CopyFields& c) {
  model::StringId name = ctx.trace().strings.Intern(CopyName(c.kind));
  DeviceSlice d = AddDeviceSlice(ctx, ss, static_cast<int64_t>(ts), c.end, name, SliceKind::kMemcpy, c.correlation);
  model::DeviceActivityTable& dev = ctx.trace().device;
  dev.bytes[d.row] = c.bytes;
  dev.copy_kind[d.row] = c.kind <= static_cast<uint8_t>(model::CopyKind::kPtoP) ? static_cast<model::CopyKind>(c.kind)
                                                                                 : model::CopyKind::kUnknown;
  // The host side of the copy decides pinned vs pageable.
  if (c.kind == static_cast<uint8_t>(format::CopyKind::kHtoD) || c.kind == static_cast<uint8_t>(format::CopyKind::kHtoH))
    dev.pinned[d.row] = Pinned(c.src_kind);
  else if (c.kind == static_cast<uint8_t>(format::CopyKind::kDtoH))
    dev.pinned[d.row] = Pinned(c.dst_kind);
}

// CUPTI gives the kernels that --gpu-metrics replays no timestamps (seen on an
// H100, CUPTI 13.0): the collector counts them as untimed and drops their
// records, so their metrics would have no kernel to attach to. Each such metric
// gets a kernel slice placed at the end of its launch call (the kernel's name,
// grid and block from the launch's arguments) lasting the profiler's own
// gpu__time_duration, on a per-device track of profiled kernels, marked with a
// "timing" argument saying so.
void AddUntimedProfiledKernels(LoadContext& ctx, AccelState& as,
                               const std::map<std::pair<uint32_t, uint64_t>, const KernelMetric*>& by) {
  model::Trace& t = ctx.trace();
  std::set<std::pair<uint32_t, uint64_t>> timed;
  for (const DeviceLink& l : as.links)
    if (t.slices.kind[t.device.slice[l.row]] == SliceKind::kKernel) timed.insert({l.process, l.correlation});
  std::map<uint32_t, const KernelMetric*> missing;  // API slice -> metric
  for (const auto& [key, m] : by) {
    if (timed.count(key)) continue;
    int64_t api = as.api_by_corr.FindSlice(key.first, key.second);
    if (api >= 0) missing[static_cast<uint32_t>(api)] = m;
  }
  if (missing.empty()) return;
  as.InitKeys(t.strings);
  std::map<uint32_t, model::StringId> kernel_name;
  std::map<uint32_t, std::vector<Arg>> launch_args;
  for (size_t i = 0; i < t.args.size(); ++i) {
    if (!missing.count(t.args.slice[i])) continue;
    model::StringId k = t.args.key[i];
    if (k == as.k_kernel) kernel_name[t.args.slice[i]] = t.args.str[i];
    if (k == as.k_grid || k == as.k_block || k == as.k_shared) launch_args[t.args.slice[i]].push_back({k, t.args.str[i], t.args.num[i]});
  }
  model::StringId timing_key = t.strings.Intern("timing");
  model::StringId timing = t.strings.Intern(
      "replayed by --gpu-metrics, which CUPTI leaves untimed: placed at the end of its launch, lasting the profiler's "
      "gpu__time_duration");
  model::StringId unnamed = t.strings.Intern("kernel (profiled, name not recorded)");
  constexpr int64_t kProfiledQueue = int64_t{1} << 40;  // above CUDA stream ids and context queues
  for (const auto& [api, m] : missing) {
    std::string_view raw = t.strings.Get(m->raw);
    int64_t duration = 0;
    constexpr std::string_view kDur = "gpu__time_duration.sum=";
    if (size_t at = raw.find(kDur); at != std::string_view::npos)
      duration = static_cast<int64_t>(std::strtod(std::string(raw.substr(at + kDur.size(), 32)).c_str(), nullptr));
    uint32_t track = ctx.Track(m->process, model::TrackKind::kDeviceQueue, kProfiledQueue, static_cast<int32_t>(m->device));
    if (!t.tracks[track].name) t.tracks[track].name = t.strings.Intern("kernels profiled by --gpu-metrics");
    auto name = kernel_name.find(api);
    int64_t ts = t.slices.end(api);
    uint32_t slice = t.slices.Add(ts, std::max<int64_t>(0, duration), track, name == kernel_name.end() ? unnamed : name->second,
                                  SliceKind::kKernel, m->correlation);
    uint32_t row = t.device.Add(slice, static_cast<int32_t>(m->device), kProfiledQueue, m->correlation);
    as.links.push_back({row, m->process, m->correlation});
    AddArg(t, slice, {timing_key, timing, NAN});
    for (const Arg& a : launch_args[api]) AddArg(t, slice, a);
  }
  ctx.CountWarning("kernels profiled by --gpu-metrics without timestamps from CUPTI (placed at their launch)");
}

}  // namespace

void RegisterAccelDecoders(DecoderRegistry& r) {
  // --- thread stream: API calls --------------------------------------------------
  r.On(kThreadStream, "api_begin", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    auto& as = ctx.Ext<AccelState>();
    as.InitKeys(ctx.trace().strings);
    if (BadTimes(ctx, ev.ts, 0)) return;
    PayloadReader p(ev);
    model::StringId name = ctx.Name(*ss.process, p.Get<uint32_t>());
    SliceKind kind = ApiKind(p.Get<uint8_t>());
    uint64_t corr = p.Get<uint64_t>();
    ss.stack.push_back({static_cast<int64_t>(ev.ts), name, kind, corr, as.NewSlot()});
  });
  r.On(kThreadStream, "api_end", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    int64_t result = PayloadReader(ev).Get<int64_t>();
    if (BadTimes(ctx, ev.ts, 0)) return;
    // Closes the innermost open call, and whatever was left open inside it.
    for (size_t k = ss.stack.size(); k-- > 0;) {
      if (!IsApi(ss.stack[k].kind)) continue;
      while (ss.stack.size() > k + 1) CloseTopSlice(ctx, ss, static_cast<int64_t>(ev.ts), 0);
      CloseTopSlice(ctx, ss, static_cast<int64_t>(ev.ts), result);
      return;
    }
    ++ctx.Ext<AccelState>().orphan_ends;
  });
  r.On(kThreadStream, "api_launch", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    auto& as = ctx.Ext<AccelState>();
    OpenSlice* o = OpenApi(ss);
    if (!o || o->ext < 0) {
      ++as.orphan_args;
      return;
    }
    PayloadReader p(ev);
    p.Get<uint64_t>();  // correlation: the open call's own
    model::StringId kernel = ctx.Name(*ss.process, p.Get<uint32_t>());
    uint32_t g[3], b[3];
    for (uint32_t& v : g) v = p.Get<uint32_t>();
    for (uint32_t& v : b) v = p.Get<uint32_t>();
    uint32_t shared = p.Get<uint32_t>();
    auto& sp = ctx.trace().strings;
    auto& args = as.open_args[static_cast<size_t>(o->ext)];
    args.push_back({as.k_kernel, kernel, NAN});
    args.push_back({as.k_grid, sp.Intern(Dim3(g[0], g[1], g[2])), NAN});
    args.push_back({as.k_block, sp.Intern(Dim3(b[0], b[1], b[2])), NAN});
    args.push_back({as.k_shared, 0, static_cast<double>(shared)});
  });
  r.On(kThreadStream, "api_arg", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    auto& as = ctx.Ext<AccelState>();
    OpenSlice* o = OpenApi(ss);
    if (!o || o->ext < 0) {
      ++as.orphan_args;
      return;
    }
    PayloadReader p(ev);
    model::StringId key = ctx.Name(*ss.process, p.Get<uint32_t>());
    as.open_args[static_cast<size_t>(o->ext)].push_back({key, 0, static_cast<double>(p.Get<uint64_t>())});
  });
  r.On(kThreadStream, "api_arg_str", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    auto& as = ctx.Ext<AccelState>();
    OpenSlice* o = OpenApi(ss);
    if (!o || o->ext < 0) {
      ++as.orphan_args;
      return;
    }
    PayloadReader p(ev);
    model::StringId key = ctx.Name(*ss.process, p.Get<uint32_t>());
    model::StringId value = ctx.Name(*ss.process, p.Get<uint32_t>());
    as.open_args[static_cast<size_t>(o->ext)].push_back({key, value, NAN});
  });
  r.On(kThreadStream, "api_call", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    auto& as = ctx.Ext<AccelState>();
    as.InitKeys(ctx.trace().strings);
    PayloadReader p(ev);
    uint64_t end = p.Get<uint64_t>();
    model::StringId name = ctx.Name(*ss.process, p.Get<uint32_t>());
    SliceKind kind = ApiKind(p.Get<uint8_t>());
    uint64_t corr = p.Get<uint64_t>();
    int64_t result = p.Get<int64_t>();
    if (BadTimes(ctx, ev.ts, end)) return;
    int64_t ts = static_cast<int64_t>(ev.ts);
    uint32_t slice = ctx.AddSlice({ts, name, kind, corr}, std::max<int64_t>(ts, static_cast<int64_t>(end)), ss.track,
                                  ss.stack.size());
    RememberApi(as, ss.process->index, corr, slice);
    if (result != 0) AddNumArg(ctx.trace(), slice, as.k_result, static_cast<double>(result));
  });
  r.On(kThreadStream, "range_begin", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    uint64_t id = p.Get<uint64_t>();
    model::StringId name = ctx.Name(*ss.process, p.Get<uint32_t>());
    uint32_t dom = p.Get<uint32_t>();
    if (BadTimes(ctx, ev.ts, 0)) return;
    model::StringId domain = dom ? ctx.Name(*ss.process, dom) : 0;
    ctx.Ext<AccelState>().range_begins[{ss.process->index, id}] = {ss.track, static_cast<int64_t>(ev.ts), name, domain};
  });
  r.On(kThreadStream, "range_end", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    uint64_t id = PayloadReader(ev).Get<uint64_t>();
    if (BadTimes(ctx, ev.ts, 0)) return;
    ctx.Ext<AccelState>().range_ends[{ss.process->index, id}] = static_cast<int64_t>(ev.ts);
  });
  r.On(kThreadStream, "overhead", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    uint64_t end = p.Get<uint64_t>();
    model::StringId name = ctx.Name(*ss.process, p.Get<uint32_t>());
    if (BadTimes(ctx, ev.ts, end)) return;
    int64_t ts = static_cast<int64_t>(ev.ts);
    ctx.AddSlice({ts, name, SliceKind::kOther, 0}, std::max<int64_t>(ts, static_cast<int64_t>(end)), ss.track,
                 ss.stack.size());
  });

  // --- device stream: activity ---------------------------------------------------
  // Wide and narrow forms (format/schema_accel.h) read into the same fields.
  r.On(kDeviceStream, "kernel", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    auto p = Read<format::KernelPayload>(ev);
    KernelFields k = KernelOf(p, p.end);
    k.queued = p.queued;
    k.submitted = p.submitted;
    AddKernel(ctx, ss, ev.ts, k);
  });
  r.On(kDeviceStream, "kernel32", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    auto p = Read<format::Kernel32Payload>(ev);
    AddKernel(ctx, ss, ev.ts, KernelOf(p, ev.ts + p.duration));
  });
  r.On(kDeviceStream, "memcpy", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    auto p = Read<format::MemcpyPayload>(ev);
    AddCopy(ctx, ss, ev.ts, CopyOf(p, p.end));
  });
  r.On(kDeviceStream, "memcpy32", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    auto p = Read<format::Memcpy32Payload>(ev);
    AddCopy(ctx, ss, ev.ts, CopyOf(p, ev.ts + p.duration));
  });
  r.On(kDeviceStream, "memset", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    auto p = Read<format::MemsetPayload>(ev);
    DeviceSlice d = AddDeviceSlice(ctx, ss, static_cast<int64_t>(ev.ts), p.end, ctx.trace().strings.Intern("Memset"),
                                   SliceKind::kMemset, p.correlation);
    ctx.trace().device.bytes[d.row] = p.bytes;
  });
  r.On(kDeviceStream, "sync", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    auto p = Read<format::SyncPayload>(ev);
    AddDeviceSlice(ctx, ss, static_cast<int64_t>(ev.ts), p.end, ctx.trace().strings.Intern(SyncName(p.type)),
                   SliceKind::kDeviceSync, p.correlation);
  });
  r.On(kDeviceStream, "command", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    auto p = Read<format::CommandPayload>(ev);
    model::StringId name = ctx.Name(*ss.process, p.name);
    DeviceSlice d = AddDeviceSlice(ctx, ss, static_cast<int64_t>(ev.ts), p.end, name, SliceKind::kOther, p.correlation);
    ctx.trace().device.bytes[d.row] = p.bytes;
  });
  r.On(kDeviceStream, "memory", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    auto p = Read<format::MemoryPayload>(ev);
    model::Trace& t = ctx.trace();
    if (p.correlation != 0)
      ctx.Ext<AccelState>().memory_calls.push_back({static_cast<uint32_t>(t.memory.size()), ss.process->index, p.correlation});
    int64_t b = static_cast<int64_t>(std::min<uint64_t>(p.bytes, INT64_MAX));
    t.memory.Add(static_cast<int64_t>(ev.ts), ss.track, t.tracks[ss.track].device, p.address,
                 p.operation == static_cast<uint8_t>(format::MemoryOp::kFree) ? -b : b, -1, -1, model::MemoryLayer::kRuntime);
  });

  // --- process stream: devices, queues, losses -----------------------------------
  r.On(kProcessStream, "device_info", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    model::Device d;
    d.process = ss.process->index;
    d.id = static_cast<int32_t>(p.Get<uint32_t>());
    d.api = std::string(p.Str());
    d.name = std::string(p.Str());
    d.vendor = std::string(p.Str());
    d.compute_units = p.Get<uint32_t>();
    d.clock_khz = p.Get<uint32_t>();
    d.memory_bytes = p.Get<uint64_t>();
    d.memory_bandwidth = p.Get<double>();
    d.peak_flops_f64 = p.Get<double>();
    d.peak_flops_f32 = p.Get<double>();
    d.peak_flops_f16 = p.Get<double>();
    d.properties = std::string(p.Str());
    // The CUDA collector writes "compute capability M.m; ..." (the event has no
    // field of its own for it).
    if (d.api == "cuda") {
      constexpr std::string_view kCc = "compute capability ";
      if (auto at = d.properties.find(kCc); at != std::string::npos) {
        unsigned major = 0, minor = 0;
        if (std::sscanf(d.properties.c_str() + at + kCc.size(), "%u.%u", &major, &minor) == 2) {
          d.compute_major = major;
          d.compute_minor = minor;
        }
      }
    }
    for (model::Device& e : ctx.trace().devices)
      if (e.process == d.process && e.id == d.id) {
        e = std::move(d);
        return;
      }
    ctx.trace().devices.push_back(std::move(d));
  });
  r.On(kProcessStream, "queue_info", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    auto device = static_cast<int32_t>(p.Get<uint32_t>());
    auto queue = static_cast<int64_t>(p.Get<uint64_t>());
    uint32_t t = ctx.Track(ss.process->index, model::TrackKind::kDeviceQueue, queue, device);
    ctx.trace().tracks[t].name = ctx.trace().strings.Intern(p.Str());
  });
  r.On(kProcessStream, "records_lost", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    std::string source(p.Str());
    uint64_t total = p.Get<uint64_t>();
    uint64_t& v = ctx.Ext<AccelState>().lost[{ss.process->index, source}];
    v = std::max(v, total);
  });

  r.On(kProcessStream, "kernel_metrics", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    KernelMetric m;
    m.process = ss.process->index;
    m.correlation = p.Get<uint64_t>();
    m.device = p.Get<uint32_t>();
    m.flops_f64 = p.Get<double>();
    m.flops_f32 = p.Get<double>();
    m.flops_f16 = p.Get<double>();
    m.dram_bytes = p.Get<double>();
    m.occupancy = p.Get<double>();
    m.raw = ctx.trace().strings.Intern(p.Str());
    ctx.Ext<AccelState>().metrics.push_back(m);
  });

  r.BeforeFinalize([](LoadContext& ctx) {
    auto& as = ctx.Ext<AccelState>();
    model::Trace& t = ctx.trace();
    as.api_by_corr.Build();  // (a later call with the same id wins, as before)
    // Hardware metrics (--gpu-metrics) onto their kernels: occupancy has a
    // column, the rest are arguments of the kernel slice.
    if (!as.metrics.empty()) {
      std::map<std::pair<uint32_t, uint64_t>, const KernelMetric*> by;
      for (const KernelMetric& m : as.metrics) by[{m.process, m.correlation}] = &m;
      AddUntimedProfiledKernels(ctx, as, by);
      model::StringId k64 = t.strings.Intern("flops_f64"), k32 = t.strings.Intern("flops_f32"),
                      k16 = t.strings.Intern("flops_f16"), kdram = t.strings.Intern("dram_bytes"),
                      kraw = t.strings.Intern("metrics");
      for (const DeviceLink& l : as.links) {
        auto it = by.find({l.process, l.correlation});
        uint32_t s = t.device.slice[l.row];
        if (it == by.end() || t.slices.kind[s] != SliceKind::kKernel) continue;
        const KernelMetric& m = *it->second;
        t.device.occupancy[l.row] = static_cast<float>(m.occupancy);
        AddNumArg(t, s, k64, m.flops_f64);
        AddNumArg(t, s, k32, m.flops_f32);
        AddNumArg(t, s, k16, m.flops_f16);
        AddNumArg(t, s, kdram, m.dram_bytes);
        AddArg(t, s, {kraw, m.raw, NAN});
      }
    }
    // A runtime allocation belongs to the thread whose API call made it
    // (cudaMalloc inside an op charges that op); module statics, which no call
    // of the program makes, stay on the device's allocations track.
    for (const auto& mc : as.memory_calls) {
      int64_t api = as.api_by_corr.FindSlice(mc.process, mc.correlation);
      if (api >= 0 && mc.row < t.memory.size()) t.memory.track[mc.row] = t.slices.track[static_cast<size_t>(api)];
    }
    uint64_t unlinked = 0;
    for (const DeviceLink& l : as.links) {
      int64_t api = as.api_by_corr.FindSlice(l.process, l.correlation);
      if (api < 0) {
        ++unlinked;
        continue;
      }
      t.device.launch[l.row] = static_cast<int32_t>(api);
      t.flows.Add(l.correlation, static_cast<int32_t>(api), static_cast<int32_t>(t.device.slice[l.row]));
    }
    if (unlinked > 0)
      ctx.Warn(std::to_string(unlinked) + " device activities have no recorded API call with their correlation id");
    uint64_t open_ranges = 0;
    for (const auto& [key, b] : as.range_begins) {
      auto it = as.range_ends.find(key);
      if (it == as.range_ends.end()) {
        ++open_ranges;
        continue;
      }
      uint32_t s = t.slices.Add(b.ts, std::max<int64_t>(0, it->second - b.ts), b.track, b.name, SliceKind::kSpan, key.second);
      if (b.domain) AddArg(t, s, {as.k_domain ? as.k_domain : t.strings.Intern("domain"), b.domain, NAN});
    }
    if (open_ranges > 0) ctx.Warn(std::to_string(open_ranges) + " ranges were started but never ended (not shown)");
    for (const auto& [key, n] : as.lost) {
      if (n == 0) continue;
      t.events_lost += n;
      ctx.Warn(std::to_string(n) + " " + key.second + " records lost before strata received them (process " +
               std::to_string(t.processes[key.first].pid) + ")");
    }
    if (as.orphan_args > 0) ctx.Warn(std::to_string(as.orphan_args) + " API arguments outside any API call (ignored)");
    if (as.orphan_ends > 0) ctx.Warn(std::to_string(as.orphan_ends) + " API call ends had no matching begin");
  });
}

}  // namespace strata::importers::strata_ctf
