#include "model/append.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace strata::model {

namespace {

// dst += f(each row of src).
template <class T, class F>
void AppendColumn(Column<T>& dst, const Column<T>& src, F f) {
  // Geometric: a merge appends many members to the same columns.
  if (dst.capacity() < dst.size() + src.size()) dst.reserve(std::max(dst.size() + src.size(), 2 * dst.capacity()));
  for (const T& v : src) dst.push_back(f(v));
}
template <class T>
void AppendColumn(Column<T>& dst, const Column<T>& src) {
  AppendColumn(dst, src, [](const T& v) { return v; });
}

// An index that may be kNone (or -1), offset by `base`.
template <class T>
auto Offset(int64_t base) {
  return [base](T v) { return v < 0 ? v : static_cast<T>(v + base); };
}

struct Bases {
  uint32_t process, track, slice, series, syscall, frame, callsite;
};

}  // namespace

void AppendTrace(Trace* dst, const Trace& src, const ClockMap& clock, const std::string& label) {
  Trace& d = *dst;
  const bool first = d.processes.empty() && d.tracks.empty() && d.slices.size() == 0;
  if (first) {
    d.source = src.source;
    d.path = src.path;
    d.hostname = src.hostname;
    d.manifest_json = src.manifest_json;
    d.clock_offset_ns = src.clock_offset_ns;
    d.source_fractional_us = src.source_fractional_us;
  }
  if (d.ops_mode.empty()) d.ops_mode = src.ops_mode;

  // Strings: every StringId of src becomes dst's id of the same text.
  std::vector<StringId> str(src.strings.size());
  for (size_t i = 0; i < str.size(); ++i) str[i] = d.strings.Intern(src.strings.Get(static_cast<StringId>(i)));
  auto S = [&str](StringId s) { return s < str.size() ? str[s] : StringId{0}; };
  auto T = [&clock](int64_t t) { return clock.Time(t); };
  auto D = [&clock](int64_t v) { return clock.Duration(v); };

  const Bases b{static_cast<uint32_t>(d.processes.size()), static_cast<uint32_t>(d.tracks.size()),
                static_cast<uint32_t>(d.slices.size()),    static_cast<uint32_t>(d.counter_series.size()),
                static_cast<uint32_t>(d.syscalls.size()),  static_cast<uint32_t>(d.frames.size()),
                static_cast<uint32_t>(d.callsites.size())};
  auto P = [&b](uint32_t p) { return p == kNoProcess ? p : p + b.process; };
  auto Tr = [&b](uint32_t t) { return t == UINT32_MAX ? t : t + b.track; };
  auto Sl = Offset<int32_t>(b.slice);

  for (Process p : src.processes) {
    p.name = S(p.name);
    p.cmdline = S(p.cmdline);
    d.processes.push_back(p);
  }
  for (Track t : src.tracks) {
    t.process = P(t.process);
    t.name = S(t.name);
    d.tracks.push_back(t);
  }

  const SliceTable& ss = src.slices;
  SliceTable& ds = d.slices;
  AppendColumn(ds.ts, ss.ts, T);
  AppendColumn(ds.dur, ss.dur, D);
  AppendColumn(ds.track, ss.track, Tr);
  AppendColumn(ds.name, ss.name, S);
  AppendColumn(ds.kind, ss.kind);
  AppendColumn(ds.depth, ss.depth);
  AppendColumn(ds.parent, ss.parent, Sl);
  AppendColumn(ds.arg, ss.arg);

  const DeviceActivityTable& sd = src.device;
  DeviceActivityTable& dd = d.device;
  AppendColumn(dd.slice, sd.slice, [&b](uint32_t s) { return s + b.slice; });
  AppendColumn(dd.device, sd.device);
  AppendColumn(dd.stream, sd.stream);
  AppendColumn(dd.correlation, sd.correlation);
  AppendColumn(dd.launch, sd.launch, Sl);
  AppendColumn(dd.bytes, sd.bytes);
  AppendColumn(dd.copy_kind, sd.copy_kind);
  AppendColumn(dd.pinned, sd.pinned);
  AppendColumn(dd.grid, sd.grid);
  AppendColumn(dd.block, sd.block);
  AppendColumn(dd.shared_mem, sd.shared_mem);
  AppendColumn(dd.registers, sd.registers);
  AppendColumn(dd.occupancy, sd.occupancy);

  AppendColumn(d.instants.ts, src.instants.ts, T);
  AppendColumn(d.instants.track, src.instants.track, Tr);
  AppendColumn(d.instants.name, src.instants.name, S);

  for (CounterSeries c : src.counter_series) {
    c.name = S(c.name);
    c.unit = S(c.unit);
    c.process = P(c.process);
    if (c.track != kNone) c.track += static_cast<int32_t>(b.track);
    d.counter_series.push_back(c);
  }
  AppendColumn(d.counters.series, src.counters.series, [&b](uint32_t s) { return s + b.series; });
  AppendColumn(d.counters.ts, src.counters.ts, T);
  AppendColumn(d.counters.value, src.counters.value);

  AppendColumn(d.flows.id, src.flows.id);
  AppendColumn(d.flows.from, src.flows.from, Sl);
  AppendColumn(d.flows.to, src.flows.to, Sl);

  // Arguments that are times on the trace clock move with it.
  const StringId queued = src.strings.Find("queued_ns"), submitted = src.strings.Find("submitted_ns");
  const size_t arg_base = d.args.size();
  AppendColumn(d.args.slice, src.args.slice, [&b](uint32_t s) { return s + b.slice; });
  AppendColumn(d.args.key, src.args.key, S);
  AppendColumn(d.args.str, src.args.str, S);
  AppendColumn(d.args.num, src.args.num);
  for (size_t i = 0; i < src.args.size(); ++i) {
    StringId k = src.args.key[i];
    double v = src.args.num[i];
    if ((k == queued || k == submitted) && k != StringPool::kNotFound && std::isfinite(v))
      d.args.num[arg_base + i] = static_cast<double>(clock.Time(static_cast<int64_t>(v)));
  }

  const MemoryTable& sm = src.memory;
  AppendColumn(d.memory.ts, sm.ts, T);
  AppendColumn(d.memory.track, sm.track, Tr);
  AppendColumn(d.memory.device, sm.device);
  AppendColumn(d.memory.addr, sm.addr);
  AppendColumn(d.memory.bytes, sm.bytes);
  AppendColumn(d.memory.total_allocated, sm.total_allocated);
  AppendColumn(d.memory.total_reserved, sm.total_reserved);
  AppendColumn(d.memory.layer, sm.layer);

  const OpTable& so = src.ops;
  AppendColumn(d.ops.slice, so.slice, [&b](uint32_t s) { return s + b.slice; });
  AppendColumn(d.ops.scope, so.scope);
  AppendColumn(d.ops.seq, so.seq);
  AppendColumn(d.ops.forward, so.forward, Sl);
  AppendColumn(d.ops.shapes, so.shapes, S);
  AppendColumn(d.ops.dtypes, so.dtypes, S);
  AppendColumn(d.ops.flops, so.flops);
  AppendColumn(d.ops.bytes, so.bytes);
  AppendColumn(d.ops.site, so.site, S);

  AppendColumn(d.edges.from, src.edges.from, Sl);
  AppendColumn(d.edges.to, src.edges.to, Sl);
  AppendColumn(d.edges.tensor, src.edges.tensor);

  const CollectiveTable& sc = src.collectives;
  AppendColumn(d.collectives.process, sc.process, P);
  AppendColumn(d.collectives.name, sc.name, S);
  AppendColumn(d.collectives.seq, sc.seq);
  AppendColumn(d.collectives.ts, sc.ts, T);
  AppendColumn(d.collectives.dur, sc.dur, D);
  AppendColumn(d.collectives.track, sc.track, Tr);
  AppendColumn(d.collectives.end_track, sc.end_track, Tr);
  AppendColumn(d.collectives.bytes, sc.bytes);
  AppendColumn(d.collectives.tensors, sc.tensors);

  for (const Graph& g0 : src.graphs) {
    Graph g = g0;
    g.process = P(g.process);
    g.name = S(g.name);
    g.module = S(g.module);
    for (auto& n : g.nodes) n = S(n);
    for (auto& n : g.node_names) n = S(n);
    for (auto& n : g.node_devices) n = S(n);
    d.graphs.push_back(std::move(g));
  }
  for (OpWindow w : src.op_windows) {
    w.process = P(w.process);
    w.ts = clock.Time(w.ts);
    w.dur = clock.Duration(w.dur);
    d.op_windows.push_back(w);
  }
  for (CollectorStatus c : src.collectors) {
    c.process = P(c.process);
    d.collectors.push_back(std::move(c));
  }
  for (Device dev : src.devices) {
    dev.process = P(dev.process);
    d.devices.push_back(std::move(dev));
  }

  // OS level.
  const ThreadStateTable& st = src.thread_states;
  AppendColumn(d.thread_states.ts, st.ts, T);
  AppendColumn(d.thread_states.dur, st.dur, D);
  AppendColumn(d.thread_states.track, st.track, Tr);
  AppendColumn(d.thread_states.state, st.state);
  AppendColumn(d.thread_states.cpu, st.cpu);
  AppendColumn(d.thread_states.syscall, st.syscall, Offset<int32_t>(b.syscall));
  AppendColumn(d.thread_states.waker, st.waker, Offset<int32_t>(b.track));
  AppendColumn(d.thread_states.callsite, st.callsite, Offset<int32_t>(b.callsite));

  const SyscallTable& sy = src.syscalls;
  AppendColumn(d.syscalls.ts, sy.ts, T);
  AppendColumn(d.syscalls.dur, sy.dur, D);
  AppendColumn(d.syscalls.track, sy.track, Tr);
  AppendColumn(d.syscalls.name, sy.name, S);
  AppendColumn(d.syscalls.nr, sy.nr);
  AppendColumn(d.syscalls.ret, sy.ret);
  AppendColumn(d.syscalls.returned, sy.returned);

  AppendColumn(d.frames.function, src.frames.function, S);
  AppendColumn(d.frames.module, src.frames.module, S);
  AppendColumn(d.frames.kind, src.frames.kind);
  AppendColumn(d.frames.pc, src.frames.pc);
  AppendColumn(d.frames.line, src.frames.line);

  AppendColumn(d.callsites.parent, src.callsites.parent, Offset<int32_t>(b.callsite));
  AppendColumn(d.callsites.frame, src.callsites.frame, [&b](uint32_t f) { return f + b.frame; });
  AppendColumn(d.callsites.depth, src.callsites.depth);

  AppendColumn(d.cpu_samples.ts, src.cpu_samples.ts, T);
  AppendColumn(d.cpu_samples.track, src.cpu_samples.track, Tr);
  AppendColumn(d.cpu_samples.cpu, src.cpu_samples.cpu);
  AppendColumn(d.cpu_samples.callsite, src.cpu_samples.callsite, Offset<int32_t>(b.callsite));

  AppendColumn(d.page_faults.ts, src.page_faults.ts, T);
  AppendColumn(d.page_faults.track, src.page_faults.track, Tr);
  AppendColumn(d.page_faults.addr, src.page_faults.addr);
  AppendColumn(d.page_faults.callsite, src.page_faults.callsite, Offset<int32_t>(b.callsite));

  AppendColumn(d.block_io.ts, src.block_io.ts, T);
  AppendColumn(d.block_io.track, src.block_io.track, Tr);
  AppendColumn(d.block_io.dev, src.block_io.dev);
  AppendColumn(d.block_io.sector, src.block_io.sector);
  AppendColumn(d.block_io.bytes, src.block_io.bytes);
  AppendColumn(d.block_io.rwbs, src.block_io.rwbs, S);

  for (const std::string& w : src.warnings) d.warnings.push_back(label.empty() ? w : label + ": " + w);
  d.events_read += src.events_read;
  d.events_lost += src.events_lost;
  d.damaged_packets += src.damaged_packets;
  d.damaged_bytes += src.damaged_bytes;
  d.damaged_events_estimate += src.damaged_events_estimate;
}

}  // namespace strata::model
